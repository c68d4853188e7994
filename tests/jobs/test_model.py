"""Typed messages between job stages survive the JSON wire format (Celery) and the spool."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from mmrag.config import CorpusConfig
from mmrag.jobs.model import Failed, Manifest, Planned, StageTimings, Work, info_from_dict


@pytest.mark.parametrize("work", [
    Work("plan", "j", 0),
    Work("commit", "j", 1, -1, Planned(7, 2, {"plan": 0.01})),
    Work("commit", "j", 1, 3, Failed("corrupt_document", "PDF is encrypted")),
    Work("write", "j", 2, 1, StageTimings({"parse": 0.5, "embed": 1.5})),
])
def test_work_round_trips_through_json(work):
    args = json.loads(json.dumps(work.as_args()))
    again = Work.from_args(work.stage, *args)
    assert again == work and type(again.info) is type(work.info)
    assert again.queue == {"plan": "cpu", "commit": "write", "write": "write"}[work.stage]


def test_untagged_info_of_an_older_version_is_read_by_its_keys():
    assert info_from_dict({"error": "too_large", "message": "m"}) == Failed("too_large", "m")
    assert info_from_dict({"pages": 3, "batches": 1, "media_type": "image/png", "timings": {}}) == Planned(3, 1, {})
    assert info_from_dict({"kind": "planned", "pages": 3, "batches": 1, "media_type": "image/png",
                           "timings": {"plan": 0.5}}) == Planned(3, 1, {"plan": 0.5})  # a field this version dropped
    assert info_from_dict({"timings": {"parse": 1.0}}) == StageTimings({"parse": 1.0})
    assert Work("embed", "j", 0, 0, Failed("x", "y")).timings == {}


def test_manifest_round_trips_with_its_corpus_config():
    m = Manifest("c", "a.pdf", "d" * 32, "b" * 64, 10, {"team": "red"}, ["text", "bm25"],
                 CorpusConfig(spaces=["text", "bm25"], pool_factor=3))
    again = Manifest.from_dict(json.loads(json.dumps(m.to_dict())))
    assert again == m and again.corpus_config is not None and again.corpus_config.pool_factor == 3
    assert Manifest.from_dict({**m.to_dict(), "corpus_config": None}).corpus_config is None
    older = {k: v for k, v in m.to_dict().items() if k != "kind"}  # spooled before the kind was carried
    assert Manifest.from_dict(older) == m and m.kind is None
    assert Manifest.from_dict(json.loads(json.dumps(replace(m, kind="pdf").to_dict()))).kind == "pdf"
