"""Every rule of the document evidence, shown on the text of real filings (../shared/corpus/filings and
sec-10q, read at test time): the reporting period from a cover, a release or an 8-K, the fiscal calendar
(a year ending in January or September, 52/53-week quarters), comparatives apart, file-name periods no
stronger than the document's own, the registrant (names starting with a digit or "The", lower case, a
logo instead of a name), tickers, forms."""

from __future__ import annotations

import shutil
from functools import lru_cache
from pathlib import Path

import pymupdf
import pytest

from mmrag.config import IngestConfig
from mmrag.doc_facts import DocumentFacts
from mmrag.ingest.doc_evidence import complete_facts, evidence_text
from mmrag.ingest.file_metadata import pdf_facts

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "corpus"
if not SHARED.exists():
    SHARED = Path("/work/shared/corpus")
FILINGS = SHARED / "filings" / "pdf"
SEC10Q = SHARED / "sec-10q" / "pdf"


@lru_cache(maxsize=64)
def facts_of(path: Path, name: str | None = None) -> DocumentFacts:
    with pymupdf.open(path) as doc:
        return complete_facts(pdf_facts(doc), name or path.name, doc)


def filing(name: str) -> DocumentFacts:
    assert (FILINGS / name).exists(), f"missing shared filing {name}"
    return facts_of(FILINGS / name)


def test_annual_cover_gives_the_fiscal_year_and_keeps_comparatives_apart() -> None:
    facts = filing("3M_2018_10K.pdf")  # "For the fiscal year ended December 31, 2018"
    assert facts.periods[:2] == ["FY2018", "2018-12-31"] and facts.date == "2018-12-31"
    assert facts.comparatives[:2] == ["FY2017", "FY2016"] and not set(facts.comparatives) & set(facts.periods)
    assert facts.form == "10-K" and facts.fiscal_year_end == 12


def test_a_fiscal_year_ending_in_january() -> None:
    annual = filing("SALESFORCE_2023_10K.pdf")  # "For the fiscal year ended January 31, 2023"
    assert annual.periods[0] == "FY2023" and annual.fiscal_year_end == 1
    quarter = filing("SALESFORCE_2023Q3_10Q.pdf")  # "quarterly period ended October 31, 2022" + nine months
    assert quarter.periods[:2] == ["FY2023-Q3", "2022-10-31"] and quarter.fiscal_year_end == 1
    assert quarter.calendar == ["2022-Q3"] and quarter.comparatives[0] == "FY2022-Q3"


def test_year_to_date_columns_tell_the_fiscal_quarter_and_year() -> None:
    apple = facts_of(SEC10Q / "2023 Q3 AAPL.pdf")  # quarter ended July 1, 2023; "Nine Months Ended"
    assert apple.periods[:2] == ["FY2023-Q3", "2023-07-01"] and apple.fiscal_year_end == 9
    assert apple.calendar == ["2023-Q2"]  # a 52/53-week quarter ending July 1 covers April-June
    msft = facts_of(SEC10Q / "2023 Q1 MSFT.pdf")  # quarter ended December 31, 2022; "Six Months Ended"
    assert msft.periods[:2] == ["FY2023-Q2", "2022-12-31"] and msft.fiscal_year_end == 6
    intel = facts_of(SEC10Q / "2022 Q3 INTC.pdf")  # ended October 1, 2022: September, third quarter
    assert intel.periods[:2] == ["FY2022-Q3", "2022-10-01"] and intel.calendar == ["2022-Q3"]
    nvidia = facts_of(SEC10Q / "2023 Q1 NVDA.pdf")  # ended April 30, 2023: first quarter of fiscal 2024
    assert nvidia.periods[0] == "FY2024-Q1" and nvidia.calendar == ["2023-Q1"]


def test_a_cover_date_on_a_later_line_of_a_two_column_cover() -> None:
    facts = filing("JPMORGAN_2022Q1_10Q.pdf")  # "For the quarterly period ended | Commission file | March 31, 2022"
    assert facts.periods[:2] == ["FY2022-Q1", "2022-03-31"] and facts.form == "10-Q"


def test_file_name_periods_count_no_more_than_the_documents_own(tmp_path: Path) -> None:
    named = facts_of(SEC10Q / "2023 Q1 MSFT.pdf")
    assert named.periods.index("FY2023-Q2") < named.periods.index("2023-Q1")  # own first, then the name's
    hashed = tmp_path / "3f9a1c0e5b7d.pdf"
    shutil.copy(SEC10Q / "2023 Q1 MSFT.pdf", hashed)
    plain = facts_of(hashed)
    assert plain.periods[:2] == named.periods[:2] and "2023-Q1" not in plain.periods
    assert filing("3M_2018_10K.pdf").periods.count("FY2018") == 1  # the name's year is the document's


def test_earnings_releases() -> None:
    crm = filing("SALESFORCE_2024Q1_EARNINGS.pdf")  # "results for its first quarter fiscal 2024 ended April 30, 2023"
    assert crm.form == "earnings release" and crm.periods[:2] == ["FY2024-Q1", "2023-04-30"]
    assert crm.entities[0] == "Salesforce" and crm.tickers == ["CRM"]  # "Salesforce (NYSE: CRM)"
    mcd = filing("MCDONALDS_2023Q1_EARNINGS.pdf")  # headline "McDONALD'S REPORTS FIRST QUARTER 2023 RESULTS"
    assert mcd.form == "earnings release" and mcd.periods[0] == "FY2023-Q1"
    assert mcd.entities[0] == "McDonald's Corporation"


def test_an_8k_is_dated_by_its_date_of_report() -> None:
    mcd = filing("MCDONALDS_8K_dated-2023-02-13.pdf")  # "Date of report (...earliest event...): February 13, 2023"
    assert mcd.form == "8-K" and mcd.periods == ["2023-02-13"] and mcd.entities[0] == "McDONALD’S CORPORATION"
    crm = filing("SALESFORCE_2021_8K_dated-2021-07-21.pdf")  # "July 21, 2021 / Date of Report (...)"
    assert crm.periods[0] == "2021-07-21" and crm.entities[0] == "salesforce.com, inc"  # lower case, caption


def test_registrants_as_companies_write_themselves() -> None:
    assert filing("3M_2018_10K.pdf").entities[0] == "3M COMPANY"  # a digit first, "COMPANY", no caption
    assert filing("EBAY_2020_10K.pdf").entities[0] == "eBay Inc"  # lower-case first letter
    assert filing("COCACOLA_2020_10K.pdf").entities[0] == "COCA COLA CO"  # above "(Exact name of Registrant ...)"
    # a logo where the cover's name would be: the name the next pages write, with "The"
    assert filing("COCACOLA_2016_10K.pdf").entities[0] == "The Coca-Cola Company"
    assert filing("JPMORGAN_2022Q1_10Q.pdf").entities[0] == "JPMorgan Chase & Co"
    entities = filing("3M_2015_10K.pdf").entities  # its cover lists "DOCUMENTS INCORPORATED BY REFERENCE"
    assert not any("DOCUMENTS" in e or "Parts of" in e for e in entities)


def test_tickers_from_the_trading_symbol_column() -> None:
    assert filing("3M_2019_10K.pdf").tickers == ["MMM"]
    assert filing("3M_2018_10K.pdf").tickers == []  # covers before 2019 have no such column
    assert filing("COCACOLA_2020_10K.pdf").tickers == ["KO"]
    assert filing("JPMORGAN_2022Q1_10Q.pdf").tickers == ["JPM"]  # not the preferred shares' "JPM PR D" parts


def test_evidence_text_speaks_the_reporting_period_not_the_comparatives() -> None:
    facts = filing("EBAY_2016_10K.pdf")
    text = evidence_text(facts, "report (3).pdf")
    assert "fiscal 2016" in text and "eBay Inc" in text and "10-K" in text
    assert "2015" not in text and "2014" not in text


@pytest.mark.parametrize("name", ["3M_2022_10K.pdf", "MCDONALDS_2022_10K.pdf", "EBAY_2022_10K.pdf"])
def test_every_filing_names_its_form_period_and_registrant(name: str) -> None:
    facts = filing(name)
    assert facts.form == "10-K" and facts.periods[0] == "FY2022" and facts.entities


def test_a_release_whose_text_layer_is_unreadable_is_read_from_its_ocr() -> None:
    # MCDONALDS_2022Q4_EARNINGS.pdf maps every glyph to a control code: its text layer names nothing.
    path = FILINGS / "MCDONALDS_2022Q4_EARNINGS.pdf"
    assert path.exists()
    with pymupdf.open(path) as doc:
        layer_only = complete_facts(pdf_facts(doc), path.name, doc)
        read = complete_facts(pdf_facts(doc), path.name, doc, IngestConfig())
    assert not any("mcdonald" in e.lower() for e in layer_only.entities)
    assert any("mcdonald" in e.lower() for e in read.entities)
    assert "2022-Q4" in read.periods
