"""The plan as a pure function: stages per space, fusion, weights, rerank, filters."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
from PIL import Image

from mmrag.config import CorpusConfig
from mmrag.embed.base import load_embedder
from mmrag.errors import InvalidInput
from mmrag.retrieve.plan import PlanOptions, build_plan, request_filter
from mmrag.spaces import Bm25Space, QueryInput, TextDenseSpace
from mmrag.spaces.base import DocumentChoice
from mmrag.spaces.visual import ClipSpace, ColpaliSpace
from mmrag.store.base import FilterSpec
from mmrag.types import SearchRequest

OPTIONS = PlanOptions(top_k=5, prefetch_limit=40, rrf_k=60, weights={})


@pytest.fixture(scope="module")
def spaces():
    return {"text": TextDenseSpace(load_embedder("fake:8")), "bm25": Bm25Space(),
            "clip": ClipSpace(load_embedder("fake:8")), "colpali": ColpaliSpace(load_embedder("fake-mv:8"))}


def image() -> Image.Image:
    return Image.fromarray(np.full((16, 16, 3), 120, dtype=np.uint8))


def test_text_query_all_spaces_is_rrf_then_maxsim_rerank(spaces):
    node = build_plan(spaces, list(spaces), QueryInput(text="red table"), OPTIONS, None)
    assert (node.using, node.limit) == ("colpali", 5) and node.vector.ndim == 2  # full multi-vector rerank
    (fused,) = node.prefetch
    assert fused.fusion == "rrf" and fused.limit == 40 and fused.weights is None
    assert [p.using for p in fused.prefetch] == ["text", "bm25", "clip", "colpali_mean"]
    assert all(p.limit == 40 for p in fused.prefetch)
    mean = fused.prefetch[3].vector
    assert mean.shape == (8,) and np.isclose(np.linalg.norm(mean), 1.0)  # pooled query for the pooled prefetch


def test_image_query_uses_only_image_spaces(spaces):
    node = build_plan(spaces, list(spaces), QueryInput(image=image()), OPTIONS, None)
    assert [p.using for p in node.prefetch[0].prefetch] == ["clip", "colpali_mean"]
    with pytest.raises(InvalidInput, match="image queries need clip or colpali"):
        build_plan(spaces, ["text", "bm25"], QueryInput(image=image()), OPTIONS, None)


def test_single_space_without_rerank_returns_top_k(spaces):
    node = build_plan(spaces, ["bm25"], QueryInput(text="nut bolt"), OPTIONS, None)
    assert node.using == "bm25" and node.limit == 5 and not node.prefetch
    colpali_only = build_plan(spaces, ["colpali"], QueryInput(text="nut"), OPTIONS, None)
    assert colpali_only.using == "colpali" and colpali_only.prefetch[0].using == "colpali_mean"
    assert colpali_only.prefetch[0].limit == 40


def test_weights_follow_stage_order_and_filters_reach_every_stage(spaces):
    flt = request_filter(SearchRequest(query="x", document_ids=["d1"], pages=(2, 4), kinds=["image"],
                                       metadata={"team": "red"}))
    assert flt.match == {"document_id": ["d1"], "meta.team": "red", "kind": ["image"]}
    assert flt.ranges == {"page": (2.0, 4.0)}
    opts = PlanOptions(top_k=3, prefetch_limit=20, rrf_k=7, weights={"bm25": 3.0})
    node = build_plan(spaces, ["text", "bm25"], QueryInput(text="nut bolt"), opts, flt)
    assert node.fusion == "rrf" and node.rrf_k == 7 and node.weights == [1.0, 3.0] and node.limit == 3
    assert all(p.filter is flt for p in node.prefetch)
    assert request_filter(SearchRequest(query="x")) is None


def test_corpus_options_shape_the_colpali_space():
    space = ColpaliSpace(load_embedder("fake-mv:8")).for_corpus(
        CorpusConfig(pool_factor=2, prefetch_quantization="binary"))
    full, mean = space.specs()
    assert (full.name, full.kind, full.index, full.quantization) == ("colpali", "multivector", False, "none")
    assert (mean.name, mean.kind, mean.index, mean.quantization) == ("colpali_mean", "dense", True, "binary")
    clip = ClipSpace(load_embedder("fake:8")).for_corpus(CorpusConfig(prefetch_quantization="scalar"))
    assert clip.specs()[0].quantization == "scalar"


def test_document_stage_is_a_formula_prior_on_the_page_plan(spaces):
    from mmrag.spaces.document import DocumentSpace

    with_doc = {**spaces, "document": DocumentSpace(load_embedder("fake:8"))}
    names = ["text", "bm25", "document"]
    fit = {"d3": 1.0, "d7": 0.65, "d8": 0.65, "d9": 0.0}
    chosen = {"doc_text": DocumentChoice(("d3", "d1"), 520), "doc_bm25": DocumentChoice(("d7",), 300)}
    options = PlanOptions(top_k=5, prefetch_limit=40, rrf_k=60, weights={}, fusion="dbsf", document_weight=1.5,
                          prior_strength=2.0, document_fit=fit, document_candidates=500, document_choice=chosen)
    flt = FilterSpec(match={"kind": "page"})
    node = build_plan(with_doc, names, QueryInput(text="Apple net sales in Q3 2023"), options, flt)
    page, document = node.prefetch
    assert node.limit == 5 and node.formula is not None and node.formula.priors == (1.5,)
    assert page.fusion == "dbsf" and [p.using for p in page.prefetch] == ["text", "bm25"]
    assert [p.limit for p in page.prefetch] == [40, 40] and page.limit == 80  # the fusion keeps every page found
    assert document.fusion == "dbsf" and [p.using for p in document.prefetch] == ["doc_text", "doc_bm25"]
    # each vector over every page of its own chosen documents (and the request's filter), no cut inside them
    assert [(p.limit, p.filter.match, p.exact) for p in document.prefetch] == [
        (520, {"kind": "page", "document_id": ["d3", "d1"]}, True),
        (300, {"kind": "page", "document_id": ["d7"]}, True)]
    assert document.limit == 820
    one = build_plan(with_doc, names, QueryInput(text="Apple"), replace(options, document_choice={
        "doc_text": chosen["doc_text"]}), None)
    assert one.prefetch[1].using == "doc_text" and one.prefetch[1].limit == 520  # one vector: no fusion
    no_documents = build_plan(with_doc, names, QueryInput(text="Apple"), replace(options, document_choice={}), None)
    assert len(no_documents.prefetch) == 1 and no_documents.formula.priors == ()  # the fit terms alone
    # one term per distinct fit, the strongest first; a document that fits nothing gets none
    assert [(b, c.match) for b, c in node.formula.boosts] == [
        (2.0, {"document_id": ["d3"]}), (1.3, {"document_id": ["d7", "d8"]})]
    bound = 1 + 2 * 1.5 + 2.0  # document match in [0, 2], fit in [0, 1]: the prior is bounded
    assert 1 + 2 * node.formula.priors[0] + max(b for b, _ in node.formula.boosts) <= bound
    fit_only = build_plan(with_doc, names, QueryInput(text="Apple"), PlanOptions(
        5, 40, 60, {}, "dbsf", prior_strength=1.0, document_fit={"d3": 0.5}), None)
    assert len(fit_only.prefetch) == 1 and fit_only.formula is not None and fit_only.formula.priors == ()
    off = build_plan(with_doc, names, QueryInput(text="Apple"), PlanOptions(5, 40, 60, {}, "dbsf"), None)
    assert off.formula is None and off.fusion == "dbsf"  # no weight, no fit: the page plan alone


def test_sub_queries_are_page_stages_fused_with_the_whole_query(spaces):
    from mmrag.spaces.document import DocumentSpace

    with_doc = {**spaces, "document": DocumentSpace(load_embedder("fake:8"))}
    names = ["text", "bm25", "document"]
    text = ("I'm building a capital-return model. From eBay's FY2021 statement of cash flows, take repurchases of "
            "common stock. Keep it short.")  # ebay-28, shortened
    options = PlanOptions(top_k=5, prefetch_limit=40, rrf_k=60, weights={}, fusion="dbsf", document_weight=1.0,
                          document_choice={v: DocumentChoice(("d1",), 90) for v in ("doc_text", "doc_bm25")},
                          sub_queries=("From eBay's FY2021 statement of cash flows, take repurchases of common stock.",
                                       "Keep it short."))
    node = build_plan(with_doc, names, QueryInput(text=text), options, None)
    sentences, document = node.prefetch  # the document stage still scores the whole query
    assert sentences.fusion == "rrf" and sentences.limit == 240 and len(sentences.prefetch) == 3  # no cut: 3 x 80
    assert all(p.fusion == "dbsf" and [c.using for c in p.prefetch] == ["text", "bm25"] for p in sentences.prefetch)
    whole, first, second = sentences.prefetch
    assert not np.allclose(whole.prefetch[0].vector, first.prefetch[0].vector)  # each sub-query embedded alone
    assert len(second.prefetch[1].vector.indices) < len(first.prefetch[1].vector.indices)  # and its own terms
    assert [p.using for p in document.prefetch] == ["doc_text", "doc_bm25"]
    off = build_plan(with_doc, names, QueryInput(text=text), replace(options, sub_queries=()), None)
    assert off.prefetch[0].fusion == "dbsf" and [c.using for c in off.prefetch[0].prefetch] == ["text", "bm25"]
