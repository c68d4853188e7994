"""bench/scale.py's core at tiny sizes: a real ingest of two PDFs grown to 50 and 200 pages, measured."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from bench import scale, scan_frontier, text_pooled, upload_scale
from bench._scale_corpus import load_base, originals, perturb
from bench._scale_measure import ARMS
from mmrag.config import CorpusConfig
from mmrag.pipeline import build_pipeline
from mmrag.types import DocumentInfo
from tests.conftest import make_settings


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory, minilm, corpus_dir: Path):
    root = tmp_path_factory.mktemp("scale")
    base = root / "base"
    pipeline = build_pipeline(make_settings(base), embedders={"text": minilm})
    try:
        pipeline.corpora.create_corpus("c", CorpusConfig(spaces=["text", "bm25", "document"]))
        pipeline.ingest.files("c", [corpus_dir / "pdf" / "multi_page.pdf", corpus_dir / "pdf" / "code_and_formula.pdf"])
    finally:
        pipeline.close()
    args = scale.parser().parse_args(["--sizes", "200,50", "--base", str(base), "--corpus", "c", "--data-dir",
                                      str(root / "grown"), "--out", str(root / "out"), "--queries", "4",
                                      "--recall-queries", "4", "--rounds", "2", "--uploads", "1",
                                      "--upload", str(corpus_dir / "pdf" / "normal_4pages.pdf")])
    rows = scale.run(args)
    return args, rows, scale.report(rows, args.out)


def test_sizes_grow_in_order_and_every_page_is_one_point(measured) -> None:
    args, rows, _ = measured
    assert [r.pages >= s for r, s in zip(rows, (50, 200), strict=True)] == [True, True]
    assert rows[0].pages < rows[1].pages and rows[0].documents < rows[1].documents
    pipeline = build_pipeline(scale.search_settings(args.data_dir), run_jobs=False)
    try:
        docs = pipeline.catalog.documents.listed("c", limit=100_000)
        assert pipeline.store.count("c") == sum(d.page_count for d in docs) == rows[1].pages
        assert len({d.id for d in docs}) == len(docs) == rows[1].documents  # the upload was deleted again
        names = [d.filename for d in docs]
        assert len(set(names)) == len(names)  # every copy is a distinct document, facts and name perturbed
        base = [d.id for d in docs[:2]]  # the real ingest's two documents come first
        copied = originals(load_base(pipeline, "c")[:2], rows[1].pages)
        assert {copied[d.id] for d in docs} == set(base)  # every document is a copy of a real one
    finally:
        pipeline.close()


def test_measurements_are_sane(measured) -> None:
    _, rows, _ = measured
    for row in rows:
        # tiny collections: the approximate search is the exhaustive one
        assert row.recall10 == row.recall10_text == row.recall10_content == [1.0] * 4
        assert set(row.recall10_by_ef) == {"text", "default"}  # --recall-ef's default values, each exhaustive here
        for by_ef in row.recall10_by_ef.values():
            assert list(by_ef) == ["None", "100", "200", "400", "800"]
            assert all(v[:2] == (1.0, 1.0) for v in by_ef.values())
        assert set(row.ms) == set(ARMS) and all(len(v) == 2 * 4 for v in row.ms.values())
        assert all(x > 0 for v in row.ms.values() for x in v)
        assert row.upload_s[0] > 0 and row.delete_s[0] > 0 and row.reweight_s > 0
        assert row.start["built_s"] <= row.start["warm_s"] <= row.start["opened_s"] <= row.start["ready_s"]
        assert 0 < row.start["pss_gb"] <= row.start["rss_gb"] and row.start["rss_gb"] > 0.1
        assert row.start["pss_gb"] == pytest.approx(row.start["pss_anonymous_gb"] + row.start["pss_files_gb"])
        assert row.start["resident"]["c/vector_storage-text"] > 0  # the text vectors the searches read
        assert row.vectors["text"] > 384 * 2 and row.vectors["bm25"] > 0 and row.vectors["doc_text"] == 384 * 2
        assert row.disk_bytes > 0


def test_result_values_are_the_ratios_of_the_two_sizes(measured) -> None:
    args, rows, values = measured
    small, large = rows
    arm = "hybrid_ranker"
    assert values["p50_ratio"].value == pytest.approx(np.median(large.ms[arm]) / np.median(small.ms[arm]))
    assert values["p99_ratio"].value == pytest.approx(np.percentile(large.ms[arm], 99)
                                                      / np.percentile(small.ms[arm], 99))
    assert values["upload_ratio"].value == pytest.approx(large.upload_s[0] / small.upload_s[0])
    assert values["recall10"].value == 1.0 and values["start_s"] == large.start["ready_s"]
    assert values["pages_large"] == large.pages
    saved = json.loads((args.out / "scale.json").read_text())
    assert [r["pages"] for r in saved["rows"]] == [small.pages, large.pages]


def test_a_copy_gets_another_company_and_other_years() -> None:
    meta = {"doc": {"entities": ["Apple Inc."], "tickers": ["AAPL"], "periods": ["2023-Q3"], "date": "2023-09-30"},
            "user": "kept"}
    copied, name = perturb(meta, "2023 Q3 AAPL.pdf", 3)
    assert copied["doc"]["entities"] != ["Apple Inc."] and "AAPL" not in copied["doc"]["tickers"]
    assert copied["doc"]["periods"] == ["2019-Q3"] and copied["doc"]["date"] == "2019-09-30"
    assert name.startswith("2019 Q3 ") and "AAPL" not in name and copied["user"] == "kept"
    assert perturb(meta, "2023 Q3 AAPL.pdf", 4) != (copied, name)


def test_continued_copies_are_those_a_folder_does_not_hold() -> None:
    from bench._scale_corpus import BaseDocument, copy_id
    from bench.scale import continued_copies

    base = [BaseDocument(DocumentInfo(id=x, corpus="c", filename=f"{x}.pdf", media_type="application/pdf",
                                      size_bytes=1, page_count=0, metadata={}, created_at=0.0), [], {}, (None, None))
            for x in "abc"]
    held = {"a", "b", "c", copy_id("a", 1), copy_id("c", 1), copy_id("b", 3)}  # grown out of order before
    got = [(k, b.info.id) for k, b in itertools.islice(continued_copies(base, held), 7)]
    assert got == [(1, "b"), (2, "a"), (2, "b"), (2, "c"), (3, "a"), (3, "c"), (4, "a")]


def test_a_kept_folder_grows_on_and_a_small_one_is_measured_first(measured, tmp_path) -> None:
    """--keep goes on from the folder an earlier run left (no copy made twice), --small is measured first in
    place: a large size's ratios come from one run without growing it again from the base."""
    import shutil

    args, rows, _ = measured
    small, kept = tmp_path / "small", tmp_path / "kept"  # copies: the module's folder stays as the others see it
    for folder in (small, kept):
        shutil.copytree(args.data_dir, folder, ignore=shutil.ignore_patterns("owner.lock"))
    more = scale.parser().parse_args(["--keep", "--small", str(small), "--sizes", str(rows[1].pages + 30),
                                      "--base", str(args.base), "--corpus", "c", "--data-dir", str(kept),
                                      "--out", str(tmp_path / "out"), "--queries", "2", "--recall-queries", "2",
                                      "--rounds", "1", "--uploads", "1", "--recall-ef", "",
                                      "--upload", str(args.upload)])
    first, grown = scale.run(more)
    assert first.pages == rows[1].pages and first.grown["documents"] == 0  # measured as it was
    assert grown.pages >= rows[1].pages + 30 and grown.documents > rows[1].documents
    pipeline = build_pipeline(scale.search_settings(kept), run_jobs=False)
    try:
        docs = pipeline.catalog.documents.listed("c", limit=100_000)
        names = [d.filename for d in docs]
        assert len(set(names)) == len(names) == grown.documents  # the copies went on: none made twice
        assert pipeline.store.count("c") == grown.pages
    finally:
        pipeline.close()


def test_upload_scale_times_both_folders_alternated_and_leaves_them_as_they_were(measured, corpus_dir: Path) -> None:
    args, rows, _ = measured
    values = upload_scale.run(args.base, args.data_dir, "c", corpus_dir / "pdf" / "normal_4pages.pdf", rounds=2)
    assert values["pages_small"] < values["pages_large"] == rows[1].pages
    for name in ("upload_ratio", "small_s", "large_s"):
        assert values[name].value > 0  # type: ignore[attr-defined]
    pipeline = build_pipeline(scale.search_settings(args.data_dir), run_jobs=False)
    try:
        assert pipeline.store.count("c") == rows[1].pages  # every upload deleted again
    finally:
        pipeline.close()


def test_the_text_prefetch_arms_find_the_exhaustive_pages_when_they_reach_every_page(measured, tmp_path) -> None:
    """bench/text_pooled.py at 200 pages: a prefetch as large as the corpus rescored by MaxSim, chunk points
    grouped by page and a graph built apart all give the full scan's top 10 (the copy of the vectors and the
    grouping are right); a prefetch of 5 by the mean vector does not."""
    args, rows, _ = measured
    values = text_pooled.run(text_pooled.parser().parse_args([
        "--data-dir", str(args.data_dir), "--corpus", "c", "--scratch", str(tmp_path / "scratch"), "--queries", "4",
        "--rounds", "1", "--limits", f"5,{rows[1].pages * 40}", "--graphs", "16:100"]))
    full = rows[1].pages * 40
    assert values["pages"] == rows[1].pages and values["build_s"] > 0
    for arm in ("graph", f"pooled_{full}", f"chunks_{full}", "graph_m16_ef100"):
        assert values[f"{arm}_recall10"].value == 1.0, arm  # type: ignore[attr-defined]
    assert values["pooled_5_recall10"].value < 1.0  # type: ignore[attr-defined]
    graphs_alone = text_pooled.run(text_pooled.parser().parse_args([
        "--data-dir", str(args.data_dir), "--corpus", "c", "--scratch", str(tmp_path / "scratch"), "--queries", "4",
        "--rounds", "1", "--graphs", "16:100", "--only-graphs", "--rebuild"]))
    assert graphs_alone["graph_m16_ef100_recall10"].value == 1.0  # type: ignore[attr-defined]
    assert not any(k.startswith(("pooled_", "chunks_")) for k in graphs_alone)  # the other arms neither built nor run


def test_scan_frontier_times_three_arms_and_scans_only_in_its_own(measured) -> None:
    """bench/scan_frontier.py: every arm timed; the scan arm's searches see the
    store's full_scan_points above any corpus, the others the store's own, restored after each search."""
    args, rows, _ = measured
    pipeline = build_pipeline(scale.search_settings(args.data_dir), run_jobs=False)
    try:
        store, seen = pipeline.retriever.store, []
        own = store.index
        search = pipeline.retriever.search
        pipeline.retriever.search = lambda corpus, request: (seen.append(store.index.full_scan_points),  # type: ignore[method-assign]
                                                             search(corpus, request))[1]
        assert scan_frontier.timed_search(pipeline, "c", "revenue", scan=True) > 0
        assert scan_frontier.timed_search(pipeline, "c", "revenue", scan=False) > 0
        assert seen == [scan_frontier.SCAN_ALL, own.full_scan_points] and store.index == own
    finally:
        pipeline.close()
    values = scan_frontier.run(args.base, args.data_dir, "c", ["revenue", "net income", "cash"], rounds=2,
                               recall_queries=2)
    assert values["pages_small"] < values["pages_large"] == rows[1].pages
    for name in ("hnsw_p50_ratio", "scan_p50_ratio", "scan_over_hnsw", "small_ms", "hnsw_ms", "scan_ms"):
        assert values[name].value > 0, name  # type: ignore[attr-defined]
    assert values["recall10"].value == 1.0  # type: ignore[attr-defined]  # 200 pages: under full_scan_points
