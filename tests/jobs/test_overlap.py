"""Parse and embed overlap in the embedded runner, within a bounded window: while batch 0 embeds, the
parse of batch 1 runs (parse_ahead >= 1), and no parse runs further ahead than the window allows.
Synchronised by events: the embedder of batch 0 holds until the parse of batch 1 has finished."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from mmrag.embed.base import Embedder, Item, Kind, load_embedder
from mmrag.jobs import stages
from mmrag.jobs.model import JobState, Work
from mmrag.jobs.runner import LocalRunner
from mmrag.jobs.writer import Upload
from mmrag.pipeline import build_pipeline
from tests.jobs.helpers import points_per_page, text_pdf, wait_until

FIRST_PAGE = "page number 1 of"  # text_pdf's first page: batch 0 with one page per batch


class GateEmbedder(Embedder):
    """The fake embedder, except that embedding the first page waits for ``gate`` (then records what
    had been parsed meanwhile)."""

    def __init__(self, gate: threading.Event, parsed: list[int], runner_queue: object) -> None:
        self.inner = load_embedder("fake:384")
        self.dim, self.multivector, self.modalities = self.inner.dim, False, self.inner.modalities
        self.gate, self.parsed, self.runner_queue = gate, parsed, runner_queue
        self.entered = threading.Event()
        self.seen: dict[str, object] = {}

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        if any(isinstance(i, str) and FIRST_PAGE in i for i in items) and not self.entered.is_set():
            self.seen["parsed_on_entry"] = sorted(self.parsed)
            self.seen["cpu_queue_on_entry"] = self.runner_queue.qsize()  # type: ignore[attr-defined]
            self.entered.set()
            self.seen["gate_opened"] = self.gate.wait(timeout=60)
            self.seen["parsed_in_gate"] = sorted(self.parsed)
        return self.inner.embed_batch(items, kind)


@pytest.mark.parametrize("ahead", [0, 1, 2])
def test_parse_of_the_next_batch_runs_while_a_batch_embeds_within_the_window(settings, monkeypatch, ahead):
    settings.jobs.batch_pages, settings.jobs.parse_ahead = 1, ahead
    settings.embed.text_model = "fake:384"
    parsed: list[int] = []
    batch_parsed = {b: threading.Event() for b in range(6)}
    original = stages.WORKER_STAGES["parse"]

    def parse(ctx: stages.StageContext, work: Work) -> list[Work]:
        out = original(ctx, work)
        if out:
            parsed.append(work.batch)
            batch_parsed[work.batch].set()
        return out

    monkeypatch.setitem(stages.WORKER_STAGES, "parse", parse)
    pipeline = build_pipeline(settings, embedders={"text": load_embedder("fake:384")})
    try:
        runner = pipeline.runner
        assert isinstance(runner, LocalRunner)
        gate = threading.Event()
        gated = GateEmbedder(gate, parsed, runner.queues["cpu"])
        text_space = runner.ctx.spaces["text"]  # type: ignore[index]
        monkeypatch.setattr(text_space, "embedder", gated)
        pipeline.corpora.create_corpus("c")
        job_id = runner.submit("c", [Upload("five.pdf", text_pdf("gate", 5), {})])
        assert gated.entered.wait(timeout=60), "batch 0 never reached the embedder"
        if ahead == 0:
            # nothing runs ahead: the parse of batch 1 is released only when batch 0 has embedded
            assert gated.seen["parsed_on_entry"] == [0] and gated.seen["cpu_queue_on_entry"] == 0
            gate.set()
        else:
            assert batch_parsed[ahead].wait(timeout=60), "the parse ahead did not run while batch 0 embedded"
            gate.set()
        job = wait_until(lambda: pipeline.jobs.status(job_id) if pipeline.jobs.status(job_id).finished else None,
                         timeout=60)
        assert gated.seen["gate_opened"] is True
        if ahead:  # batches 1..ahead parsed while batch 0 embedded, none beyond the window
            assert gated.seen["parsed_in_gate"] == list(range(ahead + 1))
        assert job.state == JobState.DONE and sorted(parsed) == [0, 1, 2, 3, 4]
        assert sorted(points_per_page(pipeline.store, "c").values()) == [1] * 5
    finally:
        pipeline.close()
