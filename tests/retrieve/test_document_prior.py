"""What a corpus's documents say about a query: organisations named by any of their names (whole words,
never a common word alone), boilerplate names, "the latest" of each series by form, each document's fit,
cached until the corpus's documents change (real catalog)."""

from __future__ import annotations

import re

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.doc_facts import DocumentFacts, StoredFacts
from mmrag.retrieve import document_prior
from mmrag.retrieve.document_prior import CorpusDocuments, DocumentsCache, entity_core, wants_recency
from mmrag.types import Document


def doc(doc_id: str, entities: list[str], periods: list[str] | None = None, *, form: str = "10-K",
        tickers: list[str] | None = None, comparatives: list[str] | None = None,
        date: str | None = None) -> StoredFacts:
    return StoredFacts(doc_id, f"{doc_id}.pdf", DocumentFacts(entities=entities, periods=periods or [], form=form,
                                                              tickers=tickers or [], comparatives=comparatives or [],
                                                              date=date or (periods or [None])[-1]))


def test_entity_core_is_the_name_people_write() -> None:
    assert entity_core("AMAZON.COM, INC") == "amazon"
    assert entity_core("Microsoft Corp.") == "microsoft"
    assert entity_core("Northwind Traders Ltd") == "northwind traders"
    assert entity_core("The Coca-Cola Company") == entity_core("COCA COLA CO") == "coca cola"
    assert entity_core("McDONALD’S CORPORATION") == entity_core("McDonald's Corporation") == "mcdonald"
    assert entity_core("JPMorgan Chase & Co") == "jpmorgan chase"
    assert entity_core("3M COMPANY") == "3m" and entity_core("salesforce.com, inc") == "salesforce"


CORPUS = CorpusDocuments.of([
    doc("mmm18", ["3M COMPANY", "New York Stock Exchange, Inc"], ["FY2018", "2018-12-31"],
        comparatives=["FY2017", "FY2016"]),
    doc("mmm19", ["3M COMPANY", "New York Stock Exchange, Inc"], ["FY2019", "2019-12-31"], tickers=["MMM"],
        comparatives=["FY2018", "FY2017"]),
    doc("ko16", ["The Coca-Cola Company", "New York Stock Exchange, Inc"], ["FY2016"], comparatives=["FY2015"]),
    doc("ko15", ["COCA COLA CO", "New York Stock Exchange, Inc"], ["FY2015"], tickers=["KO"], comparatives=["FY2014"]),
    doc("jpm", ["JPMorgan Chase & Co"], ["FY2022-Q1", "2022-03-31"], form="10-Q", tickers=["JPM"]),
    doc("mcd-q1", ["McDonald's Corporation"], ["FY2023-Q1"], form="earnings release", date="2023-04-25"),
    doc("mcd-q2", ["McDonald's Corporation"], ["FY2023-Q2"], form="earnings release", date="2023-07-27"),
    doc("mcd-8k", ["McDONALD’S CORPORATION"], ["2023-08-14"], form="8-K"),
    doc("tgt", ["Target Corporation"], ["FY2022"]),
    doc("gap", ["The Gap, Inc"], ["FY2022"]),
    doc("sq", ["Block, Inc"], ["FY2022"]),
    doc("amd", ["Advanced Micro Devices, Inc"], ["FY2022"]),
    doc("intel", ["INTEL CORPORATION"], ["FY2022"]),
])


def test_organisations_by_any_of_their_names() -> None:
    named = CORPUS.named_cores
    assert named("What was 3M's free cash flow?") == named("MMM capex") == ("3m",)
    assert named("coca-cola revenue") == named("Coca Cola's") == named("KO dividends") == ("coca cola",)
    assert named("JPMorgan net interest income") == named("JPM CET1") == ("jpmorgan chase",)
    assert named("McDonald's comparable sales") == named("mcdonalds margins") == ("mcdonald",)
    assert named("AMD data center revenue") == ("advanced micro devices",)  # initials of a longer name
    assert named("What was Intel's gross margin?") == named("Intel revenue in 2022") == ("intel",)


def test_a_common_word_alone_never_names_an_organisation() -> None:
    named = CORPUS.named_cores
    assert named("what is the target capital ratio") == ()
    assert named("the gap between revenue and cost") == ()
    assert named("a block of shares was repurchased") == ()
    assert named("intelligence tests") == ()  # a word that starts like a name is not the name
    assert named("Target's comparable sales in 2022") == ("target",)  # written as a name
    assert named("How did Target perform in fiscal 2022?") == ("target",)
    assert named("WHAT IS THE TARGET RATIO") == ()  # all capitals say nothing about names


def every_pattern(corpus: CorpusDocuments, text: str) -> tuple[str, ...]:
    """The oracle: each alias's pattern run on the whole query, no first test."""
    found: list[str] = []
    for alias in corpus.aliases:
        if alias.exact is not None:
            hit = re.search(rf"(?<![\w-]){re.escape(alias.exact)}(?![\w-])", text) is not None
        else:
            body = r"[\s\-_.,&’']*".join(re.escape(w) for w in alias.words.split())
            hits = re.finditer(rf"(?<![\w-]){body}(?![\w-])", text, re.I)
            hit = any(not alias.plain or document_prior._written_as_name(text, m.start(), m.end()) for m in hits)
        if hit and alias.core not in found:
            found.append(alias.core)
    return tuple(found)


def test_aliases_are_compiled_once_per_corpus_and_run_only_where_their_word_is(monkeypatch) -> None:
    """A corpus of thousands of documents has thousands of aliases: a query compiles none of them (they are
    compiled when the corpus's documents are read) and runs a pattern only where the query holds its folded
    first word; what it finds equals running every alias's pattern on the whole query, on names written
    every way the patterns allow."""
    queries = ["What was 3M's free cash flow?", "MMM capex", "CocaCola and Coca–Cola and coca_cola", "KO vs ko",
               "JPMORGAN CHASE revenue", "jpm", "Mcdonalds", "McDONALD’S 8-K", "Target's", "the target", "AMD",
               "amd", "INTEL", "ıntel's margin", "Advanced-Micro-Devices", "Gap Inc.", "Block's bitcoin"]
    expected = [every_pattern(CORPUS, q) for q in queries]

    def no_compiling(alias: object) -> None:
        raise AssertionError("an alias compiled per query")

    monkeypatch.setattr(document_prior.AliasPattern, "of", no_compiling)
    assert [CORPUS.named_cores(q) for q in queries] == expected
    assert expected[2] == ("coca cola",) and expected[13] == ("intel",)  # no separator; a dotless i under re.I
    assert expected[1] == ("3m",) and expected[5] == () and expected[11] == ()  # tickers and initials: as written


def test_names_in_most_documents_are_boilerplate_not_identity() -> None:
    # the exchange 3M and Coca-Cola list on their covers: seen in most documents, the main one of none
    assert CORPUS.main["mmm18"] == "3m" and CORPUS.main["ko16"] == "coca cola"
    assert CORPUS.named_cores("New York Stock Exchange listing") == ()
    alone = CorpusDocuments.of([doc(f"m{y}", ["3M COMPANY", "New York Stock Exchange, Inc"], [f"FY{y}"])
                                for y in range(2015, 2020)])
    assert set(alone.main.values()) == {"3m"}  # one company's corpus: its name is its identity


def test_latest_asks_for_the_newest_of_a_series_by_form() -> None:
    assert wants_recency("McDonald's latest earnings release") and wants_recency("the most recent 10-Q")
    assert wants_recency("Apple's current quarter") and wants_recency("last reported quarter")
    assert not wants_recency("compared with last year") and not wants_recency("current liabilities")
    assert "mcd-q2" in CORPUS.latest and "mcd-8k" not in CORPUS.latest  # 8-Ks and releases: two series
    fit = CORPUS.match("McDonald's latest earnings release").fit
    assert max(fit, key=lambda d: fit[d]) == "mcd-q2" and fit["mcd-q2"] == 1.0
    assert fit["mcd-q1"] < 1.0 and fit["mcd-8k"] < fit["mcd-q1"]


def test_fit_is_a_soft_conjunction_of_what_the_query_names() -> None:
    fit = CORPUS.match("3M cash flow statement for FY2018").fit
    assert fit["mmm18"] == 1.0  # organisation and reporting period
    assert 0.2 < fit["mmm19"] < 0.5  # the right organisation, the year only as a comparative
    assert fit.get("ko16", 0.0) < 0.1 and fit.get("tgt", 0.0) < 0.1  # neither: next to nothing
    assert max(fit, key=lambda d: fit[d]) == "mmm18"
    both = CORPUS.match("Coca-Cola revenue change from FY2015 to FY2016").fit
    assert max(both, key=lambda d: both[d]) == "ko16"  # the report that holds both years
    assert CORPUS.match("how do I reset my password").fit == {}
    assert all(0 < v <= 1 for v in CORPUS.match("JPM Q1 2022 10-Q").fit.values())


def test_only_documents_meeting_something_are_scored_and_the_fit_is_every_documents(monkeypatch) -> None:
    """A query names an organisation, a period, a form or "the latest": the fit is computed only for the
    documents that hold one of them (an index built once per corpus), and equals scoring every document."""
    queries = ["3M cash flow statement for FY2018", "Coca-Cola revenue change from FY2015 to FY2016",
               "JPM Q1 2022 10-Q", "latest earnings release", "McDonald's 8-K", "revenue in 2023-Q2",
               "Intel FY2022 10-K", "What changed in the most recent 10-K?", "how do I reset my password"]
    for text in queries:
        got = CORPUS.match(text)
        cores = set(CORPUS.named_cores(text))
        periods, forms = document_prior.query_periods(text), set(document_prior.named_forms(text, CORPUS.forms))
        latest = set(CORPUS.latest) if document_prior.wants_recency(text) else set()
        every = {}
        for doc_id, facts in CORPUS.facts.items():
            met = {"entity": float(CORPUS.main[doc_id] in cores), "form": float(facts.form in forms),
                   "latest": float(doc_id in latest), "period": document_prior.period_fit(facts, periods)}
            value = document_prior.combine({k: met[k] for k in got.named})
            if value > 0:
                every[doc_id] = round(value, 3)
        assert got.fit == every, text
    assert len(CORPUS.match("Intel FY2022 10-K").fit) < len(CORPUS.facts)  # not every document fits


def test_cache_follows_the_corpus_documents(tmp_path) -> None:
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig(spaces=["bm25"]))
    cache = DocumentsCache(catalog)

    def add(doc_id: str, entity: str, date: str) -> None:
        facts = DocumentFacts(entities=[entity], form="10-Q", date=date)
        catalog.documents.add("c", Document(id=doc_id, filename=f"{doc_id}.pdf", media_type="application/pdf",
                                           size_bytes=1, pages=[], metadata={"doc": facts.as_dict()}))

    add("q2", "Apple Inc", "2023-04-01")
    assert cache.get("c").latest == ()  # one document: no series to choose from
    add("q3", "Apple Inc", "2023-07-01")
    assert cache.get("c").latest == ("q3",)
    assert cache.get("c") is cache.get("c")  # unchanged corpus: cached
    catalog.documents.set_metadata("c", "q2", {"doc": DocumentFacts(entities=["Apple Inc"], form="10-Q",
                                                                    date="2023-10-01").as_dict()})
    assert cache.get("c").latest == ("q2",)  # facts rewritten in place (reindex-documents): rebuilt
    catalog.documents.delete("c", "q3")
    assert cache.get("c").latest == ()


def test_an_upload_reads_only_its_own_documents_and_keeps_the_compiled_names(tmp_path, monkeypatch) -> None:
    catalog = Catalog(tmp_path)
    catalog.corpora.create("c", CorpusConfig(spaces=["bm25"]))
    cache = DocumentsCache(catalog)

    def add(doc_id: str, entity: str, ticker: str) -> None:
        facts = DocumentFacts(entities=[entity], form="10-K", tickers=[ticker], periods=["FY2022"], date="2022-12-31")
        catalog.documents.add("c", Document(id=doc_id, filename=f"{doc_id}.pdf", media_type="application/pdf",
                                           size_bytes=1, pages=[], metadata={"doc": facts.as_dict()}))

    for i, name in enumerate(["Apple Inc", "Northwind Traders Ltd", "Contoso Pharmaceuticals Corp"]):
        add(f"d{i}", name, f"T{i}X")
    before = cache.get("c")
    read: list[object] = []
    facts = catalog.documents.facts
    monkeypatch.setattr(catalog.documents, "facts", lambda corpus, ids=None: read.append(ids) or facts(corpus, ids))
    add("d3", "Fabrikam Robotics Inc", "FABR")
    after = cache.get("c")
    assert read == [["d3"]]  # the new document's facts only
    assert after == CorpusDocuments.of(facts("c")) and after.main["d3"] == "fabrikam robotics"
    fit = after.match("What did Fabrikam Robotics earn in FY2022?").fit
    assert fit["d3"] == 1.0 and max(v for d, v in fit.items() if d != "d3") < 0.1
    reused = {p.alias: p for p in after._patterns}
    assert all(reused[a] is p for a, p in before.patterns().items())  # compiled once, not per upload
    catalog.documents.delete("c", "d0")
    assert "d0" not in cache.get("c").facts and read[-1] == []  # a deletion reads no facts
    catalog.documents.set_metadata("c", "d1", {"doc": DocumentFacts(entities=["Tailspin Toys"]).as_dict()})
    assert cache.get("c").main["d1"] == "tailspin toys" and read[-1] is None  # rewritten facts: all read again
