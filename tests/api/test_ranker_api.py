"""A corpus's own ranker over REST: train from judged questions, see the fold table, serve with it,
pass over a broken one, go back to the default; bad judgments are 400s that say what is wrong."""

from __future__ import annotations

import time

from fastapi.testclient import TestClient

from mmrag.evaluate.ranker_training import REPORT_FILE
from mmrag.retrieve.search import RANKER_FILE
from tests.fixtures.company_reports import COMPANIES, TOPICS, company_report, question


def _questions() -> list[dict]:
    return [{"id": f"{c}-{i}", "query": question(c, i), "judgments": {f"{c}.pdf#{2 * i + 2}": 2}, "group": c}
            for c in COMPANIES for i in range(len(TOPICS))]


def _wait(client: TestClient) -> dict:
    deadline = time.time() + 120
    while (body := client.get("/corpora/mine/ranker").json())["training"]["state"] in ("queued", "running"):
        assert time.time() < deadline, body
        time.sleep(0.1)
    return body


def test_a_corpus_trains_serves_and_drops_its_own_ranker(client: TestClient) -> None:
    assert client.post("/corpora", json={"name": "mine"}).status_code == 201
    files = [("files", (f"{c}.pdf", company_report(c.title()))) for c in COMPANIES]
    assert client.post("/corpora/mine/documents", files=files, params={"wait": "true"}).status_code == 201
    assert client.get("/corpora/mine/ranker").json() == {"active": "shipped", "problem": None, "report": None,
                                                        "training": None}

    started = client.post("/corpora/mine/ranker", json={"questions": _questions(), "force": True})
    assert started.status_code == 202 and started.json()["questions"] == 12, started.text
    body = _wait(client)
    assert body["training"]["state"] == "done" and body["training"]["done"] == 12, body
    report = body["report"]
    assert [f["fold"] for f in report["folds"]] == sorted(COMPANIES) and report["questions"] == 12
    assert report["installed"] and report["delta_low"] <= report["after"] - report["before"] <= report["delta_high"]
    assert body["active"] == "own" and body["training"]["report"] == report

    pipeline = client.app.state.pipeline
    folder = pipeline.catalog.corpus_dir("mine")
    hit = client.post("/corpora/mine/search", json={"query": question("globex", 1), "explain": True}).json()
    assert any(k.startswith("ranker.") for k in hit["results"][0]["scores"])  # served by the corpus's model

    (folder / RANKER_FILE).write_text("not a model")  # broken on disk: passed over, with its reason
    body = client.get("/corpora/mine/ranker").json()
    assert body["active"] == "shipped" and "not a LightGBM model" in body["problem"]
    assert client.post("/corpora/mine/search", json={"query": "dividends"}).status_code == 200

    assert client.delete("/corpora/mine/ranker").status_code == 204
    assert not (folder / RANKER_FILE).exists() and not (folder / REPORT_FILE).exists()
    assert client.get("/corpora/mine/ranker").json()["active"] == "shipped"
    gone = client.delete("/corpora/mine/ranker")
    assert gone.status_code == 404 and "no ranker of its own" in gone.json()["message"]


def test_judgments_that_name_no_page_or_one_group_are_refused(client: TestClient) -> None:
    assert client.post("/corpora", json={"name": "mine"}).status_code == 201
    files = [("files", ("acme.pdf", company_report("Acme")))]
    assert client.post("/corpora/mine/documents", files=files, params={"wait": "true"}).status_code == 201

    def train(questions: list[dict]) -> tuple[int, str]:
        r = client.post("/corpora/mine/ranker", json={"questions": questions})
        return r.status_code, r.json()["message"]

    one = {"id": "q", "query": "revenue", "judgments": {"acme.pdf#2": 1}, "group": "acme"}
    status, message = train([one, {**one, "id": "r", "judgments": {"other.pdf#1": 1}, "group": "other"}])
    assert status == 409 and "r: other.pdf#1" in message and "pages from 1" in message
    status, message = train([one, {**one, "id": "r", "judgments": {"acme.pdf#99": 1}, "group": "other"}])
    assert status == 409 and "acme.pdf#99" in message
    status, message = train([one, {**one, "id": "r"}])
    assert status == 400 and "1 fold(s) (acme)" in message
    unjudged = {**one, "judgments": {"acme.pdf#1": 0}}
    status, message = train([unjudged, {**unjudged, "id": "r", "group": "b"}])
    assert status == 400 and "grade above 0" in message
    status, message = train([one, {**one, "id": "r", "judgments": {"acme.pdf#0": 1}}])
    assert status == 422 and "judgments" in message  # the schema: pages from 1
    status, message = train([{**one, "judgments": {"../x#1": 1}}, one])
    assert status == 422
    assert client.post("/corpora/nope/ranker", json={"questions": [one, one]}).status_code == 404
    assert client.get("/corpora/mine/ranker").json()["training"] is None  # nothing started
