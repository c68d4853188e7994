"""DynamicBatcher bookkeeping with duck-typed fake embedders: no model, no HTTP."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Sequence

import numpy as np
import pytest
from PIL import Image

from mmrag.embed.base import Embedder, Item, Kind
from mmrag.embed.batching import DynamicBatcher, modality_bucket, shape_bucket
from mmrag.embed_service_config import BatchingConfig
from mmrag.errors import InvalidInput, Overloaded, Unavailable
from mmrag.types import Modality


class RecordingEmbedder(Embedder):
    """Records every batch; items equal to "bad" (or 1-px-wide images) make a batch fail. A batch sets
    ``entered``, then waits for ``gate`` (open unless a test closes it): events, not sleeps, order the tests."""

    spec = "record:4"
    modalities = frozenset({Modality.TEXT, Modality.IMAGE})
    multivector = True
    dim = 4
    max_batch = 64

    def __init__(self) -> None:
        self.batches: list[list[Item]] = []
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        self.batches.append(list(items))
        if any(it == "bad" or (isinstance(it, Image.Image) and it.width == 1) for it in items):
            raise ValueError("cannot embed a bad item")
        sizes = [len(it) if isinstance(it, str) else it.width for it in items]
        return [np.full((2, 4), n, np.float32) for n in sizes]


def run(coro_fn, embedder: Embedder, **cfg: float):  # type: ignore[no-untyped-def]
    async def main():  # type: ignore[no-untyped-def]
        batcher = DynamicBatcher(embedder, BatchingConfig(**cfg))
        await batcher.start()
        try:
            return await coro_fn(batcher)
        finally:
            await batcher.stop()

    return asyncio.run(main())


async def computing(emb: RecordingEmbedder) -> None:
    """Until a batch has entered the embedder (where it waits for the gate)."""
    assert await asyncio.to_thread(emb.entered.wait, 30), "no batch reached the embedder"


async def queued(b: DynamicBatcher, depth: int) -> None:
    """One turn of the event loop, in which the submissions just made run up to their first await
    (``submit`` queues its items before it awaits); then exactly ``depth`` items are queued."""
    await asyncio.sleep(0)
    assert b.queue_depth == depth


def test_concurrent_requests_share_batches_up_to_max_batch() -> None:
    emb = RecordingEmbedder()

    async def go(b: DynamicBatcher):  # type: ignore[no-untyped-def]
        results = await asyncio.gather(*(b.submit(["x" * i]) for i in range(1, 11)))
        return results, b.snapshot()

    results, snap = run(go, emb, max_batch=4, max_wait_ms=200)
    assert [r[0][0, 0] for r in results] == list(range(1, 11))  # each caller gets its own vector
    assert [len(batch) for batch in emb.batches] == [4, 4, 2]
    assert snap["batch_size_histogram"] == {2: 1, 4: 2} and snap["items_total"] == 10
    assert snap["queue_depth"] == 0


def test_max_wait_sends_a_partial_batch() -> None:
    emb = RecordingEmbedder()

    async def go(b: DynamicBatcher) -> float:
        start = time.monotonic()
        await b.submit(["alone"])
        return time.monotonic() - start

    elapsed = run(go, emb, max_batch=32, max_wait_ms=50)
    assert 0.04 <= elapsed < 1.0 and emb.batches == [["alone"]]


def test_images_of_different_shapes_are_not_batched_together() -> None:
    emb = RecordingEmbedder()
    small = [Image.new("RGB", (60, 60)) for _ in range(3)]
    large = [Image.new("RGB", (600, 800)) for _ in range(2)]

    async def go(b: DynamicBatcher) -> None:
        await asyncio.gather(*(b.submit([im]) for im in small + large), b.submit(["text"]))

    run(go, emb, max_batch=32, max_wait_ms=30)
    shapes = [{str(getattr(it, "size", "text")) for it in batch} for batch in emb.batches]
    assert sorted(map(len, emb.batches)) == [1, 2, 3]
    assert all(len(s) == 1 for s in shapes)  # every batch is one shape (or text only)


def test_bucket_functions() -> None:
    bucket = shape_bucket(64)
    assert bucket(Image.new("RGB", (60, 60))) == bucket(Image.new("RGB", (64, 1)).resize((64, 64)))
    assert bucket(Image.new("RGB", (60, 60))) != bucket(Image.new("RGB", (65, 60)))
    assert modality_bucket(Image.new("RGB", (10, 10))) == modality_bucket(Image.new("RGB", (999, 10)))
    assert modality_bucket("t") != modality_bucket(Image.new("RGB", (1, 1)))


def test_one_bad_item_fails_only_its_own_request() -> None:
    emb = RecordingEmbedder()

    async def go(b: DynamicBatcher):  # type: ignore[no-untyped-def]
        return await asyncio.gather(b.submit(["good"]), b.submit(["bad"]), b.submit(["fine!"]),
                                    return_exceptions=True), b.snapshot()

    (good, bad, fine), snap = run(go, emb, max_batch=8, max_wait_ms=100)
    assert good[0][0, 0] == 4 and fine[0][0, 0] == 5
    assert isinstance(bad, InvalidInput) and "bad item" in bad.message
    assert [len(x) for x in emb.batches] == [3, 1, 1, 1]  # the batch, then each item alone
    assert snap["failed_items_total"] == 1


def test_full_queue_is_refused_with_retry_after() -> None:
    emb = RecordingEmbedder()
    emb.gate.clear()  # the first batch blocks until released

    async def go(b: DynamicBatcher):  # type: ignore[no-untyped-def]
        first = asyncio.ensure_future(b.submit(["a"]))
        await computing(emb)  # "a" is being computed; the queue is empty again
        waiting = asyncio.ensure_future(b.submit(["b", "c", "d"]))
        await queued(b, 3)
        with pytest.raises(Overloaded) as info:
            await b.submit(["e", "f"])
        assert b.queue_depth == 3 and info.value.retry_after > 0
        emb.gate.set()
        await asyncio.gather(first, waiting)
        return b.snapshot()

    snap = run(go, emb, max_batch=1, max_wait_ms=0, queue_size=4)
    assert snap["rejected_total"] == 1 and snap["items_total"] == 4


def test_stop_fails_pending_and_refuses_new_work() -> None:
    emb = RecordingEmbedder()
    emb.gate.clear()

    async def go() -> None:
        b = DynamicBatcher(emb, BatchingConfig(max_batch=1, max_wait_ms=0))
        await b.start()
        running = asyncio.ensure_future(b.submit(["a"]))
        await computing(emb)
        pending = asyncio.ensure_future(b.submit(["b"]))
        await queued(b, 1)
        await b.stop()
        emb.gate.set()
        with pytest.raises(Unavailable):
            await pending
        with pytest.raises(Unavailable):
            await b.submit(["c"])
        running.cancel()

    asyncio.run(go())


class SizedEmbedder(RecordingEmbedder):
    """Text items' size is their length."""

    def size(self, prepared: object) -> int:
        return len(prepared) if isinstance(prepared, str) else 1


def test_a_backlog_is_batched_by_size_and_keeps_every_callers_order() -> None:
    emb = SizedEmbedder()
    emb.gate.clear()  # the first batch blocks until the backlog has queued

    async def go(b: DynamicBatcher):  # type: ignore[no-untyped-def]
        first = asyncio.ensure_future(b.submit(["x" * 50]))
        await computing(emb)  # the first batch is computing (blocked on the gate)
        lengths = [1, 40, 2, 39, 3, 38, 4, 37]  # short and long interleaved, one request each
        requests = [asyncio.ensure_future(b.submit(["y" * n])) for n in lengths]
        many = asyncio.ensure_future(b.submit(["z" * n for n in (5, 36, 6)]))  # one request of three
        await queued(b, len(lengths) + 3)
        emb.gate.set()
        return await first, await asyncio.gather(*requests), await many

    first, singles, many = run(go, emb, max_batch=4, max_wait_ms=0)
    assert first[0][0, 0] == 50
    assert [r[0][0, 0] for r in singles] == [1, 40, 2, 39, 3, 38, 4, 37]  # each caller its own vector
    assert [v[0, 0] for v in many] == [5, 36, 6]  # in the order of the request
    later = emb.batches[1:]
    assert [len(b) for b in later] == [4, 4, 3]
    spreads = [max(map(len, b)) - min(map(len, b)) for b in later]
    assert max(spreads) < 39  # no batch mixes the shortest with the longest texts
    assert "y" in later[0]  # the oldest queued item (length 1) went in the first batch after the blocked one
