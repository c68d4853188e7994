"""Periods: what time a document reports on, read from its own words, and the periods a query names.

A report's **reporting period** comes from the lines that state it: a cover's "for the fiscal year
ended December 31, 2018" / "for the quarterly period ended July 1, 2023", an earnings release's
"results for its first quarter fiscal 2024 ended April 30, 2023" or headline "reports first quarter
2023 results", an 8-K's "date of report (date of earliest event reported)". It is normalised with the
company's **fiscal calendar**: the fiscal year is named by the calendar year it ends in (a year ending
September 30, 2023 is FY2023; one ending January 31, 2023 is FY2023); a quarterly report's fiscal
quarter is told by its year-to-date columns ("nine months ended July 1, 2023" -> its third quarter),
which also gives the month the fiscal year ends in. 52/53-week years end on a weekday near a month's
end, so a period ending in a month's first week counts as ending in the month before (October 1 ->
September).

Labels (the payload values a query's periods are matched against):

- ``periods``: the reporting period, strongest first: ``FY2023-Q3`` (fiscal quarter) or ``FY2023``
  (fiscal year), the end date ``2023-07-01``, ``FY2023-H1`` for a second quarter; then the periods the
  file name gives (``2023-Q3``, ``FY2019``), which count no more than the document's own;
- ``comparatives``: what every report also shows beside it (the prior years, the same quarter a year
  earlier, the prior year-end date; an annual report's fourth quarter and second half);
- ``calendar``: the calendar quarter a fiscal quarter mostly covers (``2023-Q2`` for a quarter ending
  July 1), for questions that count quarters by the calendar.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

MONTHS = ("january", "february", "march", "april", "may", "june", "july", "august", "september",
          "october", "november", "december")
_MONTH = r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|sep(?:t(?:ember)?)?|" \
         r"oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)\.?"
_YEAR = r"((?:19|20)\d\d)"
DATE_MDY = re.compile(rf"\b({_MONTH})\s+(\d{{1,2}})\s*,?\s+{_YEAR}\b", re.I)
DATE_DMY = re.compile(rf"\b(\d{{1,2}})\s+({_MONTH})\s+{_YEAR}\b", re.I)
DATE_ISO = re.compile(r"\b((?:19|20)\d\d)-(\d\d)-(\d\d)\b")
_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "1st": 1, "2nd": 2, "3rd": 3, "4th": 4}
_ORD = r"(first|second|third|fourth|1st|2nd|3rd|4th)"
_YY = r"'?((?:19|20)?\d\d)"  # 2023, 23, '23
QUARTER = re.compile(rf"\b(?:Q([1-4])\s*(?:of\s+)?(?:(FY|fiscal(?:\s+year)?)\s*)?[-'’]?\s*{_YY}|"
                     rf"(FY\s*)?{_YY}\s*[-_ ]?\s*Q([1-4])|([1-4])Q\s*{_YY})\b(?!-)", re.I)
QUARTER_WORDS = re.compile(rf"\b{_ORD}\s+(fiscal\s+)?quarter\s+(?:of\s+)?(?:(fiscal|FY)\s*(?:year\s+)?)?{_YY}\b",
                           re.I)
_FISCAL_QUARTER = re.compile(rf"\b{_ORD}\s+quarter\s+(?:of\s+)?fiscal\s+(?:year\s+)?{_YEAR}\s+(?:ended|ending)\s+",
                             re.I)
FISCAL_YEAR = re.compile(r"\b(?:FY\s*[-'’]?\s*((?:19|20)?\d\d)|fiscal(?:\s+year)?\s+((?:19|20)\d\d))\b"
                         r"(?!\s*-?\s*Q[1-4])", re.I)
_HALF = re.compile(rf"\b(?:(H[12])\s*(?:FY\s*)?{_YY}|"
                   rf"(first|second)\s+half\s+(?:of\s+)?(?:fiscal\s+)?(?:year\s+)?{_YEAR})\b", re.I)
_ANNUAL_NAME = re.compile(rf"\b{_YEAR}\s+(?:annual\s+report|10-?K|form\s+10-?K|full[- ]year)\b|"
                          rf"\b(?:annual\s+report|10-?K)\s+(?:for\s+)?(?:fiscal\s+)?{_YEAR}\b", re.I)
_BARE_YEAR = re.compile(r"(?<![\w$.,/-])((?:19|20)\d\d)(?![\w%/-]|[.,]\d)")
_RANGE = re.compile(rf"\b(?:FY|fiscal(?:\s+year)?\s*)?{_YY}\s*(?:-|–|to|through|and|vs\.?|versus)\s*"
                    rf"(?:FY|fiscal\s*)?{_YY}\b", re.I)
_ANNUAL_COVER = re.compile(r"\bfor\s+the\s+(?:fiscal\s+)?year\s+ended\b", re.I)
_QUARTER_COVER = re.compile(r"\bfor\s+the\s+(?:quarterly\s+period|(?:fiscal\s+)?quarter)\s+ended\b", re.I)
_EVENT_COVER = re.compile(r"\bdate\s+of\s+(?:report|earliest\s+event\s+reported)\b", re.I)
_RESULTS = re.compile(rf"\b(?:reports?|announces?|results\s+for)\b[^.\n]{{0,60}}?\b{_ORD}\s+quarter\s+"
                      rf"(?:(?:and\s+)?(?:full\s+)?(?:fiscal\s+)?(?:year\s+)?)*{_YEAR}", re.I)
_YTD = re.compile(r"\b(three|six|nine)\s+months\s+ended\b", re.I)
_ABOUT = re.compile(r"\b(?:period|year|quarter|months)\s+(?:ended|ending)\b|\bas\s+of\b|\bdated\b|\beffective\b",
                    re.I)
MAX_PERIODS = 8
LOOK_AHEAD = 120  # characters after a cover phrase where its date may sit (a two-column cover puts others between)


def month_number(name: str) -> int:
    name = name.lower().rstrip(".")
    return next(i for i, m in enumerate(MONTHS, start=1) if m.startswith(name[:3]))


def iso_date(year: int, month: int, day: int) -> str | None:
    return f"{year:04d}-{month:02d}-{day:02d}" if 1 <= month <= 12 and 1 <= day <= 31 else None


def _year(text: str) -> int:
    value = int(text.lstrip("'’"))
    return value if value >= 100 else 2000 + value if value < 70 else 1900 + value


def find_dates(text: str) -> list[tuple[int, str]]:
    """(offset, ISO date) of every full date in ``text`` (month-day-year, day-month-year, ISO)."""
    found: list[tuple[int, str | None]] = []
    found += [(m.start(), iso_date(int(m[3]), month_number(m[1]), int(m[2]))) for m in DATE_MDY.finditer(text)]
    found += [(m.start(), iso_date(int(m[3]), month_number(m[2]), int(m[1]))) for m in DATE_DMY.finditer(text)]
    found += [(m.start(), iso_date(int(m[1]), int(m[2]), int(m[3]))) for m in DATE_ISO.finditer(text)]
    return sorted((pos, iso) for pos, iso in found if iso)


def quarters(text: str) -> list[tuple[int, int, bool, tuple[int, int]]]:
    """(year, quarter, says fiscal, span) of each quarter written in ``text``: ``Q3 2023``, ``2023 Q3``,
    ``Q2 of FY2023``, ``Q2 FY23``, ``2Q23``, ``FY2023 Q2``, ``second quarter (of fiscal) 2023``."""
    out = []
    for m in QUARTER.finditer(text):
        if m[1]:
            out.append((_year(m[3]), int(m[1]), bool(m[2]), m.span()))
        elif m[6] and (len(m[5]) == 4 or m[4]):
            out.append((_year(m[5]), int(m[6]), bool(m[4]), m.span()))
        elif m[7]:
            out.append((_year(m[8]), int(m[7]), False, m.span()))
    for m in QUARTER_WORDS.finditer(text):
        out.append((_year(m[4]), _ORDINAL[m[1].lower()], bool(m[2] or m[3]), m.span()))
    return out


def fiscal_years(text: str) -> list[tuple[int, tuple[int, int]]]:
    """(year, span) of each fiscal year written in ``text``: ``FY2018``, ``FY18``, ``fiscal (year) 2018``."""
    return [(_year(m[1] or m[2]), m.span()) for m in FISCAL_YEAR.finditer(text)]


def find_periods(text: str) -> list[str]:
    """Quarters and fiscal years as written (``2023-Q3``, ``FY2023-Q3`` when it says fiscal, ``FY2023``)."""
    out = [f"{'FY' if fiscal else ''}{year}-Q{q}" for year, q, fiscal, _ in quarters(text)]
    return out + [f"FY{year}" for year, _ in fiscal_years(text)]


def effective_month(iso: str) -> tuple[int, int]:
    """(year, month) a period ending on ``iso`` counts as ending in: a 52/53-week period ending in a
    month's first week ends the month before (``2022-10-01`` -> September 2022)."""
    year, month, day = (int(x) for x in iso.split("-"))
    if day <= 7:
        month -= 1
        if month == 0:
            return year - 1, 12
    return year, month


def fiscal_label(iso: str, year_end_month: int, quarter: int | None) -> str:
    """``FY2023`` / ``FY2023-Q3`` of a period ending on ``iso`` in a fiscal year ending in ``year_end_month``."""
    year, month = effective_month(iso)
    fiscal_year = year if month <= year_end_month else year + 1
    return f"FY{fiscal_year}" if quarter is None else f"FY{fiscal_year}-Q{quarter}"


def calendar_quarter(iso: str) -> str:
    """The calendar quarter a three-month period ending on ``iso`` mostly covers (its middle month's)."""
    year, month = effective_month(iso)
    middle = month - 1 or 12
    return f"{year - (middle == 12 and month == 1)}-Q{(middle - 1) // 3 + 1}"


@dataclass(slots=True)
class Reporting:
    """What a document says about its own period (empty when it states none)."""

    kind: str = ""  # "year", "quarter" or "event" (an 8-K's date of report)
    end: str | None = None  # ISO date the period ends (or the event's date)
    quarter: int | None = None  # fiscal quarter 1..4 of a quarterly period
    fiscal_year: int | None = None  # when the document names it (an earnings release's "fiscal 2024")
    year_end_month: int | None = None  # month the fiscal year ends in, when the document tells
    labels: list[str] = field(default_factory=list)  # labels it writes itself ("first quarter 2023" -> 2023-Q1)


def _date_after(text: str, start: int) -> str | None:
    for m in DATE_MDY.finditer(text, start, start + LOOK_AHEAD):
        return iso_date(int(m[3]), month_number(m[1]), int(m[2]))
    return None


def _date_before(text: str, end: int) -> str | None:
    dates = [iso for pos, iso in find_dates(text[max(0, end - 60):end])]
    return dates[-1] if dates else None


def ytd_quarter(text: str, end: str) -> int | None:
    """The fiscal quarter a quarterly report's year-to-date columns tell: "nine months ended <its end>" -> 3."""
    month = MONTHS[int(end[5:7]) - 1][:3]
    best = None
    for m in _YTD.finditer(text):
        if month in text[m.end():m.end() + 60].lower():
            best = max(best or 0, {"three": 1, "six": 2, "nine": 3}[m[1].lower()])
    return best


_STATEMENTS = (("fiscal_quarter", _FISCAL_QUARTER), ("quarter", _QUARTER_COVER), ("year", _ANNUAL_COVER),
               ("results", _RESULTS), ("event", _EVENT_COVER))


def read_reporting(texts: Sequence[str]) -> Reporting:
    """The reporting period the document's first pages state: the earliest of a cover's "for the fiscal
    year / quarterly period ended", a release's "(first) quarter (fiscal) 2024 (ended <date>)" and an 8-K's
    "date of report"; a quarterly report's fiscal quarter from its year-to-date columns."""
    flat = " ".join("\n".join(texts).split())
    found = [(m.start(), kind, m) for kind, pattern in _STATEMENTS if (m := pattern.search(flat))]
    out = Reporting()
    if not found:
        return out
    _, kind, m = min(found, key=lambda f: f[0])
    if kind in ("fiscal_quarter", "results"):
        out.kind, out.quarter, out.fiscal_year = "quarter", _ORDINAL[m[1].lower()], int(m[2])
        ended = m if kind == "fiscal_quarter" else _FISCAL_QUARTER.search(flat, m.end())
        out.end = _date_after(flat, ended.end()) if ended else None
    elif kind == "event":
        out.kind, out.end = "event", _date_after(flat, m.end()) or _date_before(flat, m.start())
    else:
        out.kind, out.end = kind, _date_after(flat, m.end())
    if out.kind == "quarter" and out.end and out.quarter is None:
        out.quarter = ytd_quarter(flat, out.end)
    if out.end and out.kind in ("quarter", "year"):
        _, month = effective_month(out.end)
        if out.kind == "year":
            out.year_end_month = month
        elif out.quarter:
            out.year_end_month = (month - 3 * out.quarter - 1) % 12 + 1
    if kind == "results" and out.end is None:
        out.labels.append(f"{out.fiscal_year}-Q{out.quarter}")  # the release's own words: "first quarter 2023"
    return out


def reporting_labels(rep: Reporting) -> tuple[list[str], list[str], list[str]]:
    """(periods, comparatives, calendar) labels of a stated reporting period."""
    periods: list[str] = []
    comparatives: list[str] = []
    calendar: list[str] = []
    fye = rep.year_end_month or 12
    if rep.kind == "year" and rep.end:
        fy = int(fiscal_label(rep.end, fye, None)[2:])
        periods += [f"FY{fy}", rep.end]
        comparatives += [f"FY{fy - 1}", f"FY{fy - 2}", f"{int(rep.end[:4]) - 1}{rep.end[4:]}",
                         f"FY{fy}-Q4", f"FY{fy}-H2"]  # an annual report also shows its last quarter, half
    elif rep.kind == "quarter" and rep.quarter:
        if rep.fiscal_year:
            fy = rep.fiscal_year
        elif rep.end:
            fy = int(fiscal_label(rep.end, fye, None)[2:])
        else:
            fy = 0
        if fy:
            periods.append(f"FY{fy}-Q{rep.quarter}")
            comparatives.append(f"FY{fy - 1}-Q{rep.quarter}")
        if rep.end:
            periods.append(rep.end)
            comparatives.append(f"{int(rep.end[:4]) - 1}{rep.end[4:]}")
            calendar.append(calendar_quarter(rep.end))
        if fy and rep.quarter == 2:
            periods.append(f"FY{fy}-H1")  # a second quarter's report also holds the first half
        if fy and rep.quarter == 4:
            periods += [f"FY{fy}", f"FY{fy}-H2"]
    elif rep.end:  # an event, or a quarter whose number the document does not tell
        periods.append(rep.end)
        if rep.kind == "quarter":
            calendar.append(calendar_quarter(rep.end))
    periods += rep.labels
    return periods, comparatives, calendar


def name_periods(name: str) -> list[str]:
    """Periods a file name gives: quarters, fiscal years, dates; a bare year (``3M_2018_10K``) as FY."""
    out = [iso for _, iso in find_dates(name)] + find_periods(name)
    if not out and not re.search(r"\d{1,2}[-_ ]\d{1,2}[-_ ](?:19|20)\d\d", name):
        years = _BARE_YEAR.findall(name.replace("_", " "))
        out = [f"FY{y}" for y in years[:1]]
    return out


def _ranked(items: Sequence[str], limit: int = MAX_PERIODS) -> list[str]:
    """Most frequent first, ties in order of first appearance."""
    counts = Counter(items)
    first = {item: i for i, item in reversed(list(enumerate(items)))}
    return sorted(counts, key=lambda item: (-counts[item], first[item]))[:limit]


def mentioned_periods(texts: Sequence[str]) -> list[str]:
    """Periods a document without a stated reporting period mentions, those it is about first: dates
    right after "period ended", "as of", "dated" (weight 5), then other dates and periods by frequency."""
    weighted: list[str] = []
    for text in texts:
        for pos, iso in find_dates(text):
            weighted += [iso] * (5 if _ABOUT.search(text[max(0, pos - 40):pos]) else 1)
        weighted += [p for p in find_periods(text) for _ in range(2)]
    return _ranked(weighted)


@dataclass(slots=True)
class PeriodFacts:
    periods: list[str]  # reporting period labels, strongest first (then the file name's)
    comparatives: list[str]  # prior periods shown beside it
    calendar: list[str]  # calendar quarter labels of a fiscal quarter
    fiscal_year_end: int | None  # month the fiscal year ends in, when the document tells


def document_periods(name: str, header: str, texts: Sequence[str]) -> PeriodFacts:
    """The periods of a document: its stated reporting period (:func:`read_reporting`), else those it
    mentions; then the file name's and the metadata's (``header``), which never outrank its own."""
    rep = read_reporting(texts)
    periods, comparatives, calendar = reporting_labels(rep)
    own = periods or mentioned_periods(texts)
    named = name_periods(name) + [iso for pos, iso in find_dates(header)
                                  if _ABOUT.search(header[max(0, pos - 40):pos])] + find_periods(header)
    if own:
        named = [p for p in named if not re.fullmatch(r"FY\d{4}", p) or p in own]  # a name's bare year yields
    merged = list(dict.fromkeys([*own, *named]))[:MAX_PERIODS]
    return PeriodFacts(merged, [c for c in dict.fromkeys(comparatives) if c not in merged], calendar,
                       rep.year_end_month)


@dataclass(frozen=True, slots=True)
class QueryPeriods:
    """Periods a query names, as labels of :class:`PeriodFacts`: one entry per period it names, each the
    labels it may mean (``Q3 2023``: the fiscal ``FY2023-Q3`` or the plain ``2023-Q3``) and the calendar
    quarters it may mean (matched against a document's calendar quarters, weaker)."""

    mentions: tuple[tuple[tuple[str, ...], tuple[str, ...]], ...] = ()

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(label for labels, _ in self.mentions for label in labels))

    def __bool__(self) -> bool:
        return bool(self.mentions)


def query_periods(text: str) -> QueryPeriods:
    """The periods a question names, in the forms people write: ``FY2018``, ``FY18``, ``fiscal 2018``,
    ``2018 annual report``, ``Q2 of FY2023``, ``second quarter 2023``, ``Q3 2023``, ``H1 2022``, a date,
    a range (``FY2015 to FY2016``: each year), a bare year (``in 2018``) when it names nothing else.
    A quarter without "fiscal" is the company's own (fiscal) quarter or, weaker, the calendar's."""
    mentions: list[tuple[tuple[str, ...], tuple[str, ...]]] = [((iso,), ()) for _, iso in find_dates(text)]
    taken: list[tuple[int, int]] = []
    for year, q, fiscal, span in quarters(text):
        plain = () if fiscal else (f"{year}-Q{q}",)
        mentions.append(((f"FY{year}-Q{q}", *plain), plain))
        taken.append(span)
    for m in _HALF.finditer(text):
        half = m[1][1] if m[1] else "1" if m[3].lower() == "first" else "2"
        mentions.append(((f"FY{_year(m[2] or m[4])}-H{half}",), ()))
        taken.append(m.span())
    for pattern in (_RANGE, FISCAL_YEAR, _ANNUAL_NAME):
        for m in pattern.finditer(text):
            if any(a <= m.start() < b for a, b in taken):
                continue
            years = [_year(g) for g in m.groups() if g]
            if pattern is _RANGE:
                explicit = m[0][:1] in "Ff" or all(len(g.lstrip("'’")) == 4 for g in m.groups() if g)
                if not explicit or not 0 < years[1] - years[0] <= 5:
                    continue
                years = list(range(years[0], years[1] + 1))
            mentions += [((f"FY{y}",), ()) for y in years]
            taken.append(m.span())
    if not mentions:
        mentions += [((f"FY{y}",), ()) for y in _BARE_YEAR.findall(text)]
    return QueryPeriods(tuple(dict.fromkeys(mentions)))


def primary_date(periods: Sequence[str]) -> str | None:
    """The date a document is about: its first full date, else the end of its first quarter or year."""
    for period in periods:
        if re.fullmatch(r"\d{4}-\d\d-\d\d", period):
            return period
    for period in periods:
        if m := re.fullmatch(r"(?:FY)?(\d{4})-Q(\d)", period):
            return f"{m[1]}-{3 * int(m[2]):02d}-{(31 if int(m[2]) in (1, 4) else 30):02d}"
        if m := re.fullmatch(r"FY(\d{4})", period):
            return f"{m[1]}-12-31"
    return None


def spoken_period(period: str) -> str:
    """A label as people write it: ``2022-06-25`` -> ``June 25, 2022``; ``FY2023-Q3`` -> ``Q3 fiscal 2023``."""
    if m := re.fullmatch(r"(\d{4})-(\d\d)-(\d\d)", period):
        return f"{MONTHS[int(m[2]) - 1].capitalize()} {int(m[3])}, {m[1]}"
    if m := re.fullmatch(r"FY(\d{4})-Q(\d)", period):
        return f"Q{m[2]} fiscal {m[1]}"
    if m := re.fullmatch(r"(\d{4})-Q(\d)", period):
        return f"Q{m[2]} {m[1]}"
    if m := re.fullmatch(r"FY(\d{4})-H(\d)", period):
        return f"H{m[2]} fiscal {m[1]}"
    if m := re.fullmatch(r"FY(\d{4})", period):
        return f"fiscal {m[1]} FY{m[1]}"
    return period
