"""The same search twice returns the same ranking: ties are broken by page id wherever the engine or the
project orders results (issue 40), so identical pages come back in one order, whichever order they were
stored in and however the cut falls inside the tie."""

from __future__ import annotations

import random
from pathlib import Path

import pymupdf
import pytest

from mmrag.retrieve import document_choice, evidence, search
from mmrag.retrieve.evidence import order_hits, query_past_ties, rank_key
from mmrag.retrieve_config import RankingConfig
from mmrag.store.base import Hit, QueryNode, in_score_order
from mmrag.types import SearchRequest

SAME = "Regional revenue grew in the northern region while costs stayed flat across the quarter."


def test_tied_hits_are_ordered_by_id_and_the_rest_keep_their_score_order() -> None:
    ids = [f"{i:08x}-0000-0000-0000-000000000000" for i in range(12)]
    hits = [Hit(i, 0.5, {}) for i in ids[:8]] + [Hit(ids[8], 0.9, {}), Hit(ids[9], 0.1, {}),
                                                 Hit(ids[10], 0.5 + 1e-9, {}), Hit(ids[11], 0.7, {})]
    for seed in range(5):
        shuffled = hits[:]
        random.Random(seed).shuffle(shuffled)
        got = in_score_order(shuffled)
        assert [h.id for h in got] == [ids[8], ids[11], *ids[:8], ids[10], ids[9]]  # 0.5 + 1e-9 ties 0.5
    assert rank_key(0.5, "b") < rank_key(0.5, "c") and rank_key(0.6, "z") < rank_key(0.5, "a")


class CutStore:
    """A store that returns ``limit`` results of a long tie in an order of its own (as an engine's internal order
    would), recording the limits asked for."""

    def __init__(self, scores: list[float]) -> None:
        self.hits = [Hit(f"{i:032x}", s, {}) for i, s in enumerate(scores)]
        self.limits: list[int] = []

    def query(self, corpus: str, node: QueryNode, **_: object) -> list[Hit]:
        self.limits.append(node.limit)
        floor = -1.0 if node.score_threshold is None else node.score_threshold
        ranked = sorted((h for h in self.hits if h.score >= floor), key=lambda h: (-h.score, h.id[::-1]))
        return in_score_order(ranked[:node.limit])  # ties in an order that is not by id


def test_a_cut_inside_a_tie_asks_once_more_for_the_whole_tie() -> None:
    store = CutStore([0.9, *[0.5] * 40, 0.5 - 4e-7, 0.5 - 6e-7, 0.1])
    node = QueryNode(limit=1)
    got = query_past_ties(store, "c", node, 5)  # type: ignore[arg-type]
    assert store.limits == [13, evidence.MAX_TIE_FETCH]  # 13 ends inside the tie: then all that scores 0.5
    assert len(got) == 42 and node.score_threshold is None  # 0.5 - 4e-7 rounds to 0.5: tied; 0.5 - 6e-7 not
    assert [h.id for h in order_hits(got, 5)] == [f"{i:032x}" for i in range(5)]  # the tie's first ids, by id
    short = CutStore([0.9, 0.8, 0.7, *[0.5] * 40])
    query_past_ties(short, "c", QueryNode(limit=1), 2)  # type: ignore[arg-type]
    assert short.limits == [10]  # the cut falls between two scores: one query


def test_a_margin_that_holds_the_tie_asks_once_and_keeps_the_same_pages() -> None:
    scores = [0.9, *[0.5] * 40, 0.1]
    wide = CutStore(scores)
    got = query_past_ties(wide, "c", QueryNode(limit=1), 5, margin=64)  # type: ignore[arg-type]
    assert wide.limits == [69]  # the whole tie came back with the first query: no second one
    narrow = CutStore(scores)
    again = query_past_ties(narrow, "c", QueryNode(limit=1), 5)  # type: ignore[arg-type]
    assert narrow.limits == [13, evidence.MAX_TIE_FETCH]
    assert [h.id for h in order_hits(got, 5)] == [h.id for h in order_hits(again, 5)] == [f"{i:032x}" for i in range(5)]
    short = CutStore(scores)
    query_past_ties(short, "c", QueryNode(limit=1), 5, margin=20)  # type: ignore[arg-type]
    assert short.limits == [25, evidence.MAX_TIE_FETCH]  # a tie longer than the margin: asked again


def pdf(title: str, extra: list[str]) -> bytes:
    doc = pymupdf.open()
    for text in [*[SAME] * 12, *extra]:  # 12 identical pages: one tie in every space
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 700), text)
    doc.set_metadata({"title": title})
    return doc.tobytes()


@pytest.fixture()
def twins(pipeline):
    """Corpus ``ab`` holds a.pdf then b.pdf, ``ba`` the same files stored in the other order."""
    files = {"a.pdf": pdf("a", ["Unrelated: a recipe for bread."]), "b.pdf": pdf("b", ["Unrelated: tide tables."])}
    for corpus, order in (("ab", ["a.pdf", "b.pdf"]), ("ba", ["b.pdf", "a.pdf"])):
        pipeline.corpora.create_corpus(corpus)
        for name in order:
            pipeline.ingest.file_bytes(corpus, files[name], name)
    return pipeline


def ranking(pipeline, corpus: str, request: SearchRequest) -> list[tuple[str, int, float]]:
    return [(Path(e.filename).name, e.page, round(e.score, 6)) for e in pipeline.search(corpus, request).evidence]


@pytest.mark.parametrize("ranker", ["shipped", "off"])
@pytest.mark.parametrize("spaces", [None, ["bm25"], ["text"]])
def test_identical_pages_come_back_in_one_order_twice_and_in_either_store_order(twins, ranker, spaces) -> None:
    twins.retriever.config = twins.retriever.config.model_copy(update={"ranking": RankingConfig(ranker=ranker)})
    for top_k in (5, 30):  # a cut inside the tie of 24 pages, and every page
        request = SearchRequest(query="revenue in the northern region", top_k=top_k, spaces=spaces)
        first = ranking(twins, "ab", request)
        assert min(top_k, 24) <= len(first) <= min(top_k, 26)  # BM25 returns only the 24 matching pages
        assert ranking(twins, "ab", request) == first  # the same search twice
        assert ranking(twins, "ba", request) == first  # stored in the other order
    evidence = twins.search("ab", SearchRequest(query="revenue in the northern region", top_k=30, spaces=spaces))
    groups: dict[float, list[str]] = {}
    for e in evidence.evidence:
        groups.setdefault(round(e.score, 6), []).append(e.page_id)
    assert all(ids == sorted(ids) for ids in groups.values())  # every tie in page id order
    if ranker == "off":  # the first stage scores the 24 identical pages alike (the ranker reads their positions)
        assert max(len(ids) for ids in groups.values()) >= 12


def test_the_rankers_first_stage_asks_the_plan_margin_past_its_cut(twins, monkeypatch) -> None:
    """The ranker's first stage (ids and scores only) asks ``PLAN_TIE_MARGIN`` results past its cut, so that a
    group of repeated pages across the cut comes back with the first query; with a margin of 1 its cut inside the
    12 identical pages of a document asks the plan again. The ranking is the same either way."""
    twins.retriever.config = twins.retriever.config.model_copy(
        update={"ranking": RankingConfig(ranker="shipped", rank_depth=6)})  # a first stage of 6 of the 24
    store, limits = twins.retriever.store, []
    query = store.query

    def spy(corpus, node, **options):  # type: ignore[no-untyped-def]
        limits.append((node.limit, node.score_threshold is not None))
        return query(corpus, node, **options)

    monkeypatch.setattr(store, "query", spy)
    request = SearchRequest(query="revenue in the northern region", top_k=5)  # every space: the ranker runs
    rankings = {}
    for margin in (search.PLAN_TIE_MARGIN, 1):
        monkeypatch.setattr(search, "PLAN_TIE_MARGIN", margin)
        limits.clear()
        rankings[margin] = ranking(twins, "ab", request)
        assert (6 + margin, False) in limits  # the first stage's query
        assert any(again for _, again in limits) == (margin == 1)  # asked again only when the tie ran past
    wide, narrow = rankings.values()
    assert wide == narrow and len(wide) == 5


@pytest.fixture()
def documents(request, settings, minilm):
    """Three documents of 12 identical pages each whose evidence (title) matches the query more or less, stored
    in two orders (corpora ``fwd`` and ``rev``) on the embedded engine ``request.param`` (qdrant-edge, or
    qdrant-client's local mode): the document stage's budget of 16 pages ends inside the second."""
    from mmrag.pipeline import build_pipeline

    settings.store.engine = request.param
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    titles = {"n.pdf": "Northern region revenue", "s.pdf": "Southern region revenue", "w.pdf": "Tide tables"}
    files = {name: pdf(title, []) for name, title in titles.items()}
    for corpus, order in (("fwd", list(files)), ("rev", list(files)[::-1])):
        pipeline.corpora.create_corpus(corpus)
        for name in order:
            pipeline.ingest.file_bytes(corpus, files[name], name)
    yield pipeline
    pipeline.close()


@pytest.mark.parametrize(("documents", "first_documents"), [("edge", 32), ("edge", 1), ("local", 32)],
                         indirect=["documents"])
def test_the_document_stage_scores_its_documents_whole_in_either_store_order(documents, monkeypatch,
                                                                             first_documents) -> None:
    """A document's pages share its document vectors, so a document stage that keeps the best 16 pages cut
    inside the second document's 12 in the engine's own order: some of its identical pages had the document's
    match and the others none. Documents are chosen whole (ties by document id), so identical pages of one
    document score alike, twice and in either store order; also when the choice must ask the engine again for
    more documents (a first query of one document and no margin: 12 pages, short of 16)."""
    monkeypatch.setattr(document_choice, "FIRST_DOCUMENTS", first_documents)
    if first_documents == 1:
        monkeypatch.setattr(evidence, "TIE_MARGIN", 0)
    ranking_config = RankingConfig(ranker="off", document_candidates=16)
    documents.retriever.config = documents.retriever.config.model_copy(update={"ranking": ranking_config})
    request = SearchRequest(query="revenue in the northern region", top_k=36)
    first = ranking(documents, "fwd", request)
    assert len(first) == 36
    scores: dict[str, set[float]] = {}
    for name, _, score in first:
        scores.setdefault(name, set()).add(score)
    assert all(len(s) == 1 for s in scores.values()), scores  # 12 identical pages of a document: one score
    assert len(set().union(*scores.values())) == 3  # and the three documents three scores (w.pdf outside the budget)
    assert ranking(documents, "fwd", request) == first
    assert ranking(documents, "rev", request) == first


@pytest.mark.parametrize("documents", ["edge"], indirect=True)
def test_the_document_choice_reads_its_documents_from_the_cache_and_the_catalog_only_for_new_ones(documents,
                                                                                               monkeypatch) -> None:
    """Each hit of the choice is a document's first page: its document and page count come from the corpus's
    documents as the search already holds them (no catalog query per search: thousands of hits at scale); a
    document the cached list does not know (written since) from the catalog; the choice is the same."""
    from mmrag.retrieve.document_prior import CorpusDocuments
    from mmrag.retrieve.plan import document_space

    retriever = documents.retriever
    spaces = retriever.corpus_spaces(documents.catalog.corpora.config("fwd"))
    space = document_space(spaces, list(spaces))
    query = retriever._query_input("fwd", SearchRequest(query="revenue in the northern region"))
    cached = retriever.documents.get("fwd")
    assert sorted(cached.pages.values()) == [12, 12, 12]
    with_catalog = document_choice.choose_documents(documents.store, documents.catalog, "fwd", space, query, 16, None)
    assert with_catalog and all(len(c.documents) == 2 and c.pages == 24 for c in with_catalog.values())

    def no_catalog(*_: object) -> None:
        raise AssertionError("a catalog query for a document the cache knows")

    with monkeypatch.context() as m:
        m.setattr(documents.catalog.pages, "places", no_catalog)
        m.setattr(documents.catalog.documents, "page_counts", no_catalog)
        assert document_choice.choose_documents(documents.store, documents.catalog, "fwd", space, query, 16, None,
                                                cached) == with_catalog
    older = CorpusDocuments.of([f for f in documents.catalog.documents.facts("fwd") if f.filename != "n.pdf"])
    assert document_choice.choose_documents(documents.store, documents.catalog, "fwd", space, query, 16, None,
                                            older) == with_catalog  # n.pdf: not in the older list, from the catalog
