"""What a corpus's documents say about a query: how well each document fits what the query names (its
organisation, period, form, "the latest"), as one number per document in [0, 1] (the document stage's
prior, :func:`mmrag.retrieve.plan.with_document_stage`). Built from the catalog's document facts
(:mod:`mmrag.ingest.doc_evidence`) and cached per corpus until its documents change.

Organisations are matched by the names people use: the main entity's name without its legal form
(``AMAZON.COM, INC`` -> "amazon"), its first word when that is a name of its own (``JPMorgan`` of
``JPMorgan Chase & Co``), its initials when it has three words or more (``AMD``), its tickers. Whole
words only; a name that could be a common word ("Target", "Gap", "Block", "Apple") only where the query
writes it as a name (capitalised in a sentence that is not all capitals, or as a possessive). A name
seen in most documents of a corpus but rarely a main one (the exchange every filing lists) is
boilerplate, not identity.
"""

from __future__ import annotations

import functools
import re
import threading
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import InitVar, dataclass, field

from mmrag.catalog import Catalog
from mmrag.doc_facts import DocumentFacts, StoredFacts
from mmrag.ingest.doc_forms import latest_of_series, named_forms
from mmrag.ingest.doc_periods import QueryPeriods, query_periods
from mmrag.ingest.ids import page_id, point_id

_LEGAL = re.compile(r"(?:[\s,]+(?:inc|incorporated|corp|corporation|co|company|ltd|limited|llc|llp|l\.?p|plc|gmbh|"
                    r"ag|s\.?a|n\.?v|s\.?p\.?a|se|pty|kk|group|holdings)\.?)+$")
_POSSESSIVE = re.compile(r"['’]s\b", re.I)
RECENCY = re.compile(r"\b(?:latest|newest|most\s+recent(?:ly)?|up-to-date|current\s+(?:quarter|report|filing|version|"
                     r"release|edition|fiscal\s+year|10-[qk])|last\s+(?:reported|filed|published|available)\b)", re.I)
WEIGHTS = {"entity": 1.5, "period": 1.0, "form": 0.5, "latest": 0.5}
"""How much each named constraint counts in a document's fit (normalised over those the query names)."""
WEAK = 0.3  # fit of a period a document only shows beside its own (comparatives, calendar quarters)
FLOOR = 0.1  # what a constraint the document does not meet leaves of its fit (soft conjunction)
CONJUNCTIVE = True  # combine the constraints as a soft conjunction (else their weighted mean)
BOILERPLATE_SHARE = 0.5  # a name in more than this share of the documents ...
BOILERPLATE_MAIN = 0.25  # ... that is the main entity of at most this share of them is boilerplate


def wants_recency(text: str) -> bool:
    """Does the query ask for the newest document ("latest", "most recent", "current quarter", "last
    reported")? Not "last year" (the year before) nor a bare "current" or "recent"."""
    return bool(RECENCY.search(text))


@functools.lru_cache(maxsize=1 << 16)
def entity_core(name: str) -> str:
    """An organisation's name as people write it in a question: no "The", no legal form, no ``.com``,
    no possessive (``AMAZON.COM, INC`` -> ``amazon``, ``McDONALD'S CORPORATION`` -> ``mcdonald``). Kept for
    the names seen last (a corpus's documents are read again whenever one is added)."""
    core = _LEGAL.sub("", name.lower().strip(" .,"))
    core = re.sub(r"^the\s+", "", core)
    core = re.sub(r"\.(?:com|net|org|io)\b", "", core)
    return re.sub(r"(?:\s+(?:&|and))+$", "", name_words(core))


def name_words(text: str) -> str:
    """Lower-case words of ``text`` (possessives, punctuation and hyphens out: ``Coca-Cola's`` -> ``coca cola``)."""
    return " ".join(re.sub(r"[^\w&]+", " ", _POSSESSIVE.sub("", text.lower())).split())


@dataclass(frozen=True, slots=True)
class Alias:
    """One way a query can name an organisation."""

    words: str  # lower-case words (name_words)
    core: str  # the organisation (entity_core of its main name)
    plain: bool  # one ordinary-looking word: counts only where the query writes it as a name
    exact: str | None = None  # a form that must appear exactly as written (tickers, initials)


def _distinctive(token: str) -> bool:
    """A written word that cannot be a common word: a digit, a capital after a small letter, an apostrophe."""
    return bool(re.search(r"\d|[a-z][A-Z]|[A-Z]{2}[a-z]|['’]", token))


def aliases_of(core: str, written: Iterable[str], tickers: Iterable[str]) -> list[Alias]:
    """The names people use for the organisation ``core`` (``written``: its names as documents write them)."""
    words = core.split()
    tokens = {t for name in written for t in re.split(r"[\s,]+", name)}
    distinct = any(_distinctive(t) for t in tokens if name_words(t) == (words[0] if words else ""))
    out = [Alias(core, core, len(words) == 1 and not distinct)]
    if len(words) >= 2 and words[1] not in ("of", "and", "&") and len(words[0]) >= 4:
        out.append(Alias(words[0], core, not distinct))
    if len([w for w in words if w not in ("of", "and", "&", "the")]) >= 3:
        initials = "".join(w[0] for w in words if w not in ("of", "and", "&", "the")).upper()
        out.append(Alias(initials.lower(), core, False, initials))
    if re.search(r"\w['’]s\b", " ".join(written), re.I):
        out.append(Alias(core + "s", core, False))  # McDonald's -> "mcdonalds"
    out += [Alias(t.lower(), core, False, t) for t in tickers if len(t) >= 2]
    return out


def fold(text: str) -> str:
    """``text`` case-folded so that whatever a case-insensitive pattern matches in it contains the pattern's own
    folded text (``ı`` too, which ``re.I`` takes for ``i``): the cheap test :meth:`AliasPattern.found` makes
    before the pattern runs."""
    return text.casefold().replace("ı", "i")


@dataclass(frozen=True, slots=True)
class AliasPattern:
    """An alias compiled once per corpus, with the folded text every match of it contains (its first word,
    or the whole exact form)."""

    alias: Alias
    pattern: re.Pattern[str]
    key: str

    @classmethod
    def of(cls, alias: Alias) -> AliasPattern:
        if alias.exact is not None:
            return cls(alias, re.compile(rf"(?<![\w-]){re.escape(alias.exact)}(?![\w-])"), fold(alias.exact))
        words = alias.words.split()
        body = r"[\s\-_.,&’']*".join(re.escape(w) for w in words)
        return cls(alias, re.compile(rf"(?<![\w-]){body}(?![\w-])", re.I), fold(words[0]) if words else "")

    def found(self, text: str, folded: str) -> bool:
        """Does the query ``text`` (``folded``: :func:`fold` of it) name the alias?"""
        if self.key not in folded:
            return False
        if self.alias.exact is not None:
            return self.pattern.search(text) is not None
        hits = self.pattern.finditer(text)
        return any(not self.alias.plain or _written_as_name(text, m.start(), m.end()) for m in hits)


def _written_as_name(text: str, start: int, end: int) -> bool:
    """Does the query write the word at ``start:end`` as a name: capitalised in a sentence that is not all
    capitals or title case, or followed by a possessive?"""
    word = text[start:end]
    if _POSSESSIVE.match(text, end):
        return True
    if not any(ch.islower() for ch in text):
        return False  # all capitals say nothing about names
    rest = text[:start] + " " + text[end:]
    others = [w for w in re.findall(r"(?<![\w'’])[A-Za-z][a-zA-Z'’-]*", rest) if not w.isupper()]
    casing = sum(w[0].isupper() for w in others) / len(others) if others else 0.0
    return word[:1].isupper() and casing < 0.6


@dataclass(frozen=True, slots=True)
class DocumentMatch:
    """What a query names of a corpus's documents, and how well each document fits it."""

    fit: Mapping[str, float]  # document id -> fit in (0, 1]; documents that fit nothing are left out
    named: tuple[str, ...] = ()  # what the query named: "entity", "period", "form", "latest"


@dataclass(frozen=True, slots=True)
class CorpusDocuments:
    facts: Mapping[str, DocumentFacts]  # document id -> facts
    main: Mapping[str, str]  # document id -> core of its main organisation ("" when none)
    aliases: tuple[Alias, ...]
    latest: tuple[str, ...]  # ids of each series' newest document (latest_of_series)
    forms: tuple[str, ...]  # the forms the corpus's documents have
    pages: Mapping[str, int] = field(default_factory=dict)  # document id -> its page count
    _patterns: tuple[AliasPattern, ...] = field(init=False, repr=False, compare=False)  # the aliases, compiled
    _points: dict[int, dict[str, str]] = field(default_factory=dict, repr=False, compare=False)
    _holders: dict[str, dict[str, set[str]]] = field(default_factory=dict, repr=False, compare=False)
    compiled: InitVar[Mapping[Alias, AliasPattern] | None] = None  # patterns of an earlier state, reused

    def __post_init__(self, compiled: Mapping[Alias, AliasPattern] | None) -> None:
        known = compiled or {}
        object.__setattr__(self, "_patterns", tuple(known.get(a) or AliasPattern.of(a) for a in self.aliases))

    def patterns(self) -> dict[Alias, AliasPattern]:
        """Each alias's compiled pattern (what :meth:`of` reuses when the corpus's documents change)."""
        return {p.alias: p for p in self._patterns}

    def holders(self) -> dict[str, dict[str, set[str]]]:
        """Who holds what, computed once: ``main`` core, ``form``, ``period`` label (a reporting period or a
        comparative) and ``calendar`` quarter -> the ids of the documents that have it."""
        if not self._holders:
            index: dict[str, dict[str, set[str]]] = {"main": {}, "form": {}, "period": {}, "calendar": {}}
            for doc_id, facts in self.facts.items():
                index["main"].setdefault(self.main.get(doc_id, ""), set()).add(doc_id)
                if facts.form:
                    index["form"].setdefault(facts.form, set()).add(doc_id)
                for label in (*facts.periods, *facts.comparatives):
                    index["period"].setdefault(label, set()).add(doc_id)
                for quarter in facts.calendar:
                    index["calendar"].setdefault(quarter, set()).add(doc_id)
            self._holders.update(index)
        return self._holders

    def meeting_any(self, cores: set[str], periods: QueryPeriods, forms: set[str], latest: set[str]) -> set[str]:
        """The documents that meet at least one of the named constraints (the others fit 0: :func:`combine`)."""
        held = self.holders()
        out = set(latest)
        for key, values in (("main", cores), ("form", forms)):
            for value in values:
                out |= held[key].get(value, set())
        for labels, calendar in periods.mentions:
            for label in labels:
                out |= held["period"].get(label, set())
            for quarter in calendar:
                out |= held["calendar"].get(quarter, set())
        return out

    def page_points(self, number: int) -> Mapping[str, str]:
        """The point id of every document's page ``number`` -> the document's id (content-derived ids:
        :func:`mmrag.ingest.ids.page_id`), computed once per number: where the document stage's hits (one page
        per document) come from, without a catalog query per search."""
        known = self._points.get(number)
        if known is None:
            known = {point_id(page_id(doc, number)): doc for doc, pages in self.pages.items() if pages >= number}
            self._points[number] = known
        return known

    @classmethod
    def of(cls, documents: Iterable[StoredFacts], previous: CorpusDocuments | None = None) -> CorpusDocuments:
        """The corpus's documents; ``previous``: the same corpus before its latest change, whose compiled alias
        patterns are reused (an upload into a corpus of thousands of documents compiles its own aliases only:
        compiling every alias was ~1.4 s at 4,823 documents)."""
        docs = list(documents)
        seen: Counter[str] = Counter()
        first: Counter[str] = Counter()
        for facts in (d.facts for d in docs):
            cores = {entity_core(e) for e in facts.entities} - {""}
            seen.update(cores)
            if facts.entities:
                first[entity_core(facts.entities[0])] += 1
        boiler = {c for c, n in seen.items() if len(docs) >= 3 and n > BOILERPLATE_SHARE * len(docs)
                  and first[c] <= BOILERPLATE_MAIN * n}
        main: dict[str, str] = {}
        written: dict[str, list[str]] = {}
        tickers: dict[str, list[str]] = {}
        for doc in docs:
            facts = doc.facts
            name = next((e for e in facts.entities if entity_core(e) not in boiler and len(entity_core(e)) >= 2), "")
            core = entity_core(name) if name else ""
            main[doc.document_id] = core
            if core:
                written.setdefault(core, []).append(name)
                tickers.setdefault(core, []).extend(t for t in facts.tickers if t not in tickers[core])
        aliases = [a for core in written for a in aliases_of(core, written[core], tickers[core])]
        counts = Counter(a.words for a in aliases)
        kept = tuple(a for a in aliases if counts[a.words] == 1 or a.words == a.core)  # shared short names: ambiguous
        latest = latest_of_series(docs, main)
        forms = tuple(sorted({d.facts.form for d in docs if d.facts.form}))
        return cls({d.document_id: d.facts for d in docs}, main, kept, tuple(latest), forms,
                   {d.document_id: d.pages for d in docs}, compiled=previous.patterns() if previous else None)

    def named_cores(self, text: str) -> tuple[str, ...]:
        """The organisations (cores) the query names, by any alias. The aliases' patterns are compiled once
        per corpus and run only where the query holds their folded first word: the cost per query is a
        substring test per alias, not a regex (a corpus of 5,000 documents has thousands of aliases)."""
        found: list[str] = []
        folded = fold(text)
        for compiled in self._patterns:
            if compiled.alias.core not in found and compiled.found(text, folded):
                found.append(compiled.alias.core)
        return tuple(found)

    def match(self, text: str) -> DocumentMatch:
        """Each document's fit to the query: for each constraint the query names (organisation, period,
        form, latest) how well the document meets it (1; a period it only shows beside its own, a
        comparative: :data:`WEAK`; else 0), combined as a soft conjunction: the product of
        ``FLOOR + (1 - FLOOR) * met`` raised to the constraint's weight (:data:`CONJUNCTIVE`; else the
        weighted mean). A document that meets everything fits 1."""
        cores = set(self.named_cores(text))
        periods = query_periods(text)
        forms = set(named_forms(text, self.forms))
        latest = set(self.latest) if wants_recency(text) and self.latest else set()
        asked = (("entity", cores), ("period", periods), ("form", forms), ("latest", latest))
        named = tuple(k for k, on in asked if on and WEIGHTS[k] > 0)
        fit: dict[str, float] = {}
        some = self.meeting_any(cores, periods, forms, latest) if named else set()
        for doc_id, facts in ((d, f) for d, f in self.facts.items() if d in some):
            met = {"entity": float(self.main.get(doc_id) in cores), "form": float(facts.form in forms),
                   "latest": float(doc_id in latest)}
            if periods:
                met["period"] = period_fit(facts, periods)
            value = combine({k: met[k] for k in named})
            if value > 0:
                fit[doc_id] = round(value, 3)
        return DocumentMatch(fit, named)


def combine(met: Mapping[str, float]) -> float:
    """The fit of a document from how well it meets each named constraint (see :meth:`CorpusDocuments.match`)."""
    if CONJUNCTIVE:
        value = 1.0
        for k, m in met.items():
            value *= (FLOOR + (1 - FLOOR) * m) ** WEIGHTS[k]
        return value if any(met.values()) else 0.0
    total = sum(WEIGHTS[k] for k in met)
    return sum(WEIGHTS[k] * m for k, m in met.items()) / total


def period_fit(facts: DocumentFacts, periods: QueryPeriods) -> float:
    """How well a document's periods meet the query's: the mean over the periods it names of 1 (a
    reporting period), :data:`WEAK` (a comparative or calendar quarter), 0."""
    scores = []
    for labels, calendar in periods.mentions:
        if any(p in facts.periods for p in labels):
            scores.append(1.0)
        elif any(p in facts.comparatives for p in labels) or any(c in facts.calendar for c in calendar):
            scores.append(WEAK)
        else:
            scores.append(0.0)
    return sum(scores) / len(scores) if scores else 0.0


class DocumentsCache:
    """:class:`CorpusDocuments` per corpus, rebuilt when the corpus's documents change. Thread-safe.

    A change that adds or deletes documents reads the facts of the new ones only and reuses the compiled alias
    patterns (:meth:`CorpusDocuments.of`): an upload into a corpus of thousands of documents is searchable
    without reading and compiling every document again. Rewritten facts (the revision) read everything."""

    FULL_READ = 256  # more new documents than this: one read of the whole corpus's facts

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cache: dict[str, tuple[tuple[int, str, int], CorpusDocuments, dict[str, StoredFacts]]] = {}
        self._lock = threading.Lock()

    def get(self, corpus: str) -> CorpusDocuments:
        signature = self.catalog.documents.signature(corpus)
        with self._lock:
            hit = self._cache.get(corpus)
        if hit is not None and hit[0] == signature:
            return hit[1]
        known = hit[2] if hit is not None and hit[0][2] == signature[2] else {}
        stored = self._facts(corpus, known)
        value = CorpusDocuments.of(stored, hit[1] if hit is not None else None)
        with self._lock:
            self._cache[corpus] = (signature, value, {s.document_id: s for s in stored})
        return value

    def _facts(self, corpus: str, known: Mapping[str, StoredFacts]) -> list[StoredFacts]:
        """Every document's facts, oldest first: those in ``known`` kept, the others read."""
        if not known:
            return self.catalog.documents.facts(corpus)
        ids = self.catalog.documents.ids(corpus)
        missing = [i for i in ids if i not in known]
        if len(missing) > self.FULL_READ:
            return self.catalog.documents.facts(corpus)
        read = {s.document_id: s for s in self.catalog.documents.facts(corpus, missing)}
        return [f for i in ids if (f := known.get(i) or read.get(i)) is not None]  # deleted since: left out
