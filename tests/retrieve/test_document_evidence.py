"""Document evidence from file names, metadata and first pages: organisations, periods, versions,
labels, titles, for several kinds of documents (not only filings), and the periods a query names."""

from __future__ import annotations

from pathlib import Path

import pymupdf

from mmrag.doc_facts import DocumentFacts, StoredFacts
from mmrag.ingest.doc_evidence import complete_facts, document_facts, evidence_text
from mmrag.ingest.doc_forms import latest_of_series, series_key
from mmrag.ingest.doc_periods import query_periods
from mmrag.ingest.file_metadata import pdf_facts

FILING = """UNITED STATES SECURITIES AND EXCHANGE COMMISSION
FORM 10-Q
QUARTERLY REPORT PURSUANT TO SECTION 13
For the quarterly period ended June 25, 2022
Apple Inc.
(Exact name of Registrant as specified in its charter)
As of July 15, 2022, 16,070,752,000 shares were outstanding."""

GUIDE = """Acme Robotics GmbH
Controller X200 User Guide
Version 2.4.1, Rev. C
Published 3 March 2021. This guide replaces the 2019 edition."""

CONTRACT = """SERVICE AGREEMENT
This Agreement is dated 2024-01-15 between Northwind Traders Ltd and Contoso Corporation.
It is effective as of February 1, 2024 for the fiscal year 2024."""


def test_filing_facts_put_the_period_it_is_about_first() -> None:
    facts = document_facts("2022 Q3 AAPL.pdf", [FILING], {"subject": "Form 10-Q for the period ending 2022-06-25"})
    assert facts.entities[0] == "Apple Inc" and facts.form == "10-Q"
    assert facts.periods[0] == "2022-06-25" and "2022-Q3" in facts.periods  # no year-to-date columns; the name's
    assert "Form 10-Q" in facts.labels
    text = evidence_text(facts, "2022 Q3 AAPL.pdf")
    assert text.startswith("2022 Q3 AAPL") and "June 25, 2022" in text and "Apple Inc" in text


def test_guide_and_contract_facts() -> None:
    guide = document_facts("x200-guide.pdf", [GUIDE])
    assert guide.entities == ["Acme Robotics GmbH"]
    assert guide.versions[:2] == ["Version 2.4.1", "Rev. C"] and "2019 edition" in guide.versions
    assert guide.periods[0] == "2021-03-03" and "user guide" in guide.labels
    contract = document_facts("msa.pdf", [CONTRACT])
    assert {"Northwind Traders Ltd", "Contoso Corporation"} <= set(contract.entities)
    assert contract.periods[:2] == ["2024-01-15", "2024-02-01"] and "FY2024" in contract.periods
    assert "agreement" in contract.labels


def test_facts_already_read_from_the_file_win() -> None:
    base = DocumentFacts(title="Quarterly results", author="IR team")
    facts = document_facts("q.pdf", [FILING], {"title": "0000320193-23-000006"}, base=base)
    assert (facts.title, facts.author) == ("Quarterly results", "IR team")
    assert document_facts("q.pdf", [FILING], {"title": "0000320193-23-000006"}).title != "0000320193-23-000006"


def test_pdf_facts_read_metadata_and_the_largest_type(tmp_path: Path) -> None:
    path = tmp_path / "handbook.pdf"
    with pymupdf.open() as doc:
        page = doc.new_page()
        page.insert_text((72, 90), "Field Service Handbook", fontsize=24)
        page.insert_text((72, 140), "Issued by Example Holdings on 12 May 2020, revision v3.2.", fontsize=10)
        doc.set_metadata({"creationDate": "D:20200512093000Z"})
        doc.save(path)
    with pymupdf.open(path) as doc:
        facts = complete_facts(pdf_facts(doc), path.name, doc)
    assert facts.title == "Field Service Handbook" and facts.source_kind == "pdf" and facts.page_count == 1
    assert str(facts.created).startswith("2020-05-12") and facts.periods[0] == "2020-05-12"
    assert facts.entities == ["Example Holdings"] and facts.versions == ["revision v3.2"]


def test_query_periods_in_the_forms_people_write() -> None:
    def labels(text: str) -> list[tuple[str, ...]]:
        return [m[0] for m in query_periods(text).mentions]

    assert labels("net sales in the quarter ended June 25, 2022?") == [("2022-06-25",)]
    assert labels("Intel's Q2 2023 10-Q") == [("FY2023-Q2", "2023-Q2")]  # fiscal, or as written
    assert labels("second quarter 2023") == labels("2Q23") == labels("Q2'23") == [("FY2023-Q2", "2023-Q2")]
    assert labels("Q2 of FY2023") == labels("FY2023 Q2") == labels("Q2 FY23") == [("FY2023-Q2",)]
    assert labels("FY2018 net income") == labels("FY18 net income") == labels("fiscal 2018") == [("FY2018",)]
    assert labels("the 2018 annual report") == labels("3M's 2018 10-K") == labels("revenue in 2018") == [("FY2018",)]
    assert labels("H1 2022") == labels("first half of 2022") == [("FY2022-H1",)]
    assert labels("from FY2015 to FY2016") == labels("2015-2016") == [("FY2015",), ("FY2016",)]
    assert query_periods("Q3 2023").mentions[0][1] == ("2023-Q3",)  # may also mean the calendar quarter
    assert labels("what changed since last year") == labels("how do I install it") == []
    assert labels("Q1 10-Q") == []  # "10" of "10-Q" is no year


def test_latest_of_series_is_the_newest_dated_document_of_each_series() -> None:
    def facts(name: str, text: str) -> DocumentFacts:
        return document_facts(name, [text])

    q2 = facts("a.pdf", FILING.replace("June 25, 2022", "March 26, 2022"))
    q3 = facts("b.pdf", FILING)
    other = facts("c.pdf", FILING.replace("Apple Inc.", "Intel Corporation"))  # a series of one: no "latest"
    guides = [facts("h1.pdf", "Employee Handbook\n2021 edition, published 1 March 2021"),
              facts("h2.pdf", "Employee Handbook\n2023 edition, published 2 May 2023")]
    undated = DocumentFacts(title="Employee Handbook")
    assert series_key(q2, "a.pdf") == series_key(q3, "b.pdf") == "apple inc|10-q"
    assert series_key(other, "c.pdf") != series_key(q3, "b.pdf")
    assert series_key(guides[0], "h1.pdf") == series_key(guides[1], "h2.pdf") == "employee handbook"
    docs = [StoredFacts(*row) for row in [("q2", "a.pdf", q2), ("q3", "b.pdf", q3), ("intel", "c.pdf", other),
                                          ("h1", "h1.pdf", guides[0]), ("h2", "h2.pdf", guides[1]),
                                          ("undated", "h0.pdf", undated)]]
    assert latest_of_series(docs) == ["h2", "q3"]
    assert latest_of_series([*docs, StoredFacts("q3-copy", "b2.pdf", q3)]) == ["h2", "q3", "q3-copy"]  # tied: both
