"""The REST evaluation job end to end: start a suite over HTTP, follow it, fetch the report;
on the real pipeline (MiniLM + BM25) and the embedded store."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from mmrag.errors import NotFound
from mmrag.pipeline import build_pipeline


def _finished(client: TestClient, job_id: str) -> dict:
    deadline = time.time() + 300
    while (job := client.get(f"/evaluations/{job_id}").json())["state"] in ("queued", "running"):
        assert time.time() < deadline, job
        time.sleep(0.5)
    return dict(job)


def test_evaluation_job_over_rest(suite_dir, settings, minilm):
    settings.eval_suites_dir = suite_dir.parent
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    try:
        with TestClient(create_app(settings, pipeline)) as client:
            assert "suite" in client.get("/evaluations/suites").json()
            bad = client.post("/evaluations", json={"suite": "nope"})
            assert bad.status_code == 404 and "available" in bad.json()["message"]
            bad_variant = client.post("/evaluations", json={"suite": "suite", "variant": "zzz"})
            assert bad_variant.status_code == 400 and "variant" in bad_variant.json()["message"]

            r = client.post("/evaluations", json={"suite": "suite"})
            assert r.status_code == 202
            job_id = r.json()["id"]
            job = _finished(client, job_id)
            assert job["state"] == "done", job
            assert str(settings.data_dir) not in str(job), job  # no server path reaches a client
            report = client.get(f"/evaluations/{job_id}/report").json()
            assert report["metrics"]["ndcg@3"] == job["metrics"]["ndcg@3"] > 0.5
            assert {"recall@5", "mrr@5", "map@5", "precision@1"} <= set(report["metrics"])
            md = client.get(f"/evaluations/{job_id}/files/report.md")
            assert md.status_code == 200 and "ndcg@3" in md.text
            # %2F is not normalised away by the client: the path reaches the route as ../../catalog.sqlite3
            escape = client.get(f"/evaluations/{job_id}/files/..%2F..%2Fcatalog.sqlite3")
            assert escape.status_code == 404 and "has no artefact" in escape.json()["message"]
            assert (settings.data_dir / "catalog.sqlite3").exists()  # the file it asked for is really there
            for name in ("../../catalog.sqlite3", "/etc/passwd", "plots/../../../jobs.sqlite3"):
                with pytest.raises(NotFound, match="has no artefact"):
                    client.app.state.evaluations.artefact(job_id, name)
            assert client.app.state.evaluations.artefact(job_id, "report.md").name == "report.md"
            assert client.get("/evaluations/deadbeef/report").status_code == 404
            answer = client.post("/corpora/eval-tiny/answer", json={"question": "When was the typewriter patented?",
                                                                "stream": False})
            assert answer.status_code == 200, answer.text
            body = answer.json()
            assert body["mode"] == "extractive" and "no vision-language model" in body["notice"].lower()
            assert body["citations"] and body["citations"][0]["filename"] == "alpha.pdf"
    finally:
        pipeline.close()


def test_compare_two_runs_over_rest_matches_the_cli_comparison(suite_dir, settings, minilm, tmp_path):
    from mmrag.evaluate.compare import compare_runs

    with (suite_dir / "suite.yaml").open("a") as f:
        f.write("  dense:\n    pipeline: {spaces: [text]}\n")
    settings.eval_suites_dir = suite_dir.parent
    pipeline = build_pipeline(settings, embedders={"text": minilm})
    try:
        with TestClient(create_app(settings, pipeline)) as client:
            ids = [client.post("/evaluations", json={"suite": "suite", "variant": v}).json()["id"]
                   for v in (None, "dense")]
            jobs = [_finished(client, i) for i in ids]
            assert all(j["state"] == "done" for j in jobs), jobs
            r = client.post(f"/evaluations/{ids[1]}/compare", json={"baseline": ids[0]})
            assert r.status_code == 200, r.text
            got = r.json()
            service = client.app.state.evaluations
            cli = compare_runs(service.out_dir(ids[0]), service.out_dir(ids[1]), tmp_path / "cmp", plots=False)
            assert got["metrics"] == cli["metrics"] and got["paired_items"] == cli["paired_items"] > 0
            assert [got["a"]["id"], got["b"]["id"]] == ids and str(settings.data_dir) not in r.text
            assert [got["a"]["label"], got["b"]["label"]] == ["tiny (bm25)", "tiny:dense (text)"]
            same = client.post(f"/evaluations/{ids[0]}/compare", json={"baseline": ids[0]})
            assert same.status_code == 400 and "different runs" in same.json()["message"]
            unknown = client.post("/evaluations/deadbeef/compare", json={"baseline": ids[0]})
            assert unknown.status_code == 404
    finally:
        pipeline.close()
