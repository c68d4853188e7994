"""Dynamic batching in front of one embedder: bounded queue, max batch, max wait, shape buckets.

A plain asyncio object (no web framework): the embedding service's request handlers call
:meth:`DynamicBatcher.submit`; a worker task groups queued items by ``(kind, bucket)``
and runs ``embedder.compute`` on one dedicated thread (embedders are called from one
thread at a time), so the event loop keeps accepting requests while a batch computes.

Items arrive *prepared* (``embedder.prepare``: token ids, pixel tensors): texts are tokenised
in :meth:`DynamicBatcher.submit` on the event loop, images by the service on the thread that
decodes them. So while one batch computes, the next requests are tokenised and preprocessed,
and the forward thread only collates and runs the model.

Scheduling: the bucket whose oldest item waited longest goes next; it is sent as soon as it
holds ``max_batch`` items or its oldest item has waited ``max_wait_ms`` (default 0: as soon as
the forward thread is free, with everything that queued while it computed). When more than a
batch is queued, the batch is the oldest item and the queued items closest to it in size
(tokens), as infinity-emb and vLLM's embedding runners sort by length. Items of different
image shapes wait in different buckets so a batch is not padded to its largest member.
If a batch forward raises, its items are retried one by one, so one bad item fails only
its own request.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
import threading
import time
from collections.abc import Callable, Hashable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from mmrag.embed.base import Embedder, Item, Kind
from mmrag.embed.threads import ThreadPicker, candidates, set_torch_threads
from mmrag.embed_service_config import BatchingConfig
from mmrag.errors import InvalidInput, Overloaded, Unavailable

BucketFn = Callable[[Item], Hashable]
SORT_WINDOW = 8  # batches' worth of queued items searched for items of similar size
log = logging.getLogger(__name__)


def modality_bucket(item: Item) -> Hashable:
    """One bucket per modality: for models whose preprocessing resizes every image alike."""
    return "text" if isinstance(item, str) else "image"


def shape_bucket(bucket_px: int) -> BucketFn:
    """Buckets by image size rounded up to ``bucket_px``: for models that pad to the largest image."""

    def bucket(item: Item) -> Hashable:
        if isinstance(item, str):
            return "text"
        w, h = item.size
        return ("image", math.ceil(w / bucket_px), math.ceil(h / bucket_px))

    return bucket


def bucket_for(embedder: Embedder, config: BatchingConfig) -> BucketFn:
    """Multi-vector models see the image at its own resolution; dense CLIP-style models resize."""
    return shape_bucket(config.bucket_px) if embedder.multivector else modality_bucket


@dataclass(slots=True)
class _Pending:
    item: Item
    prepared: Any  # embedder.prepare's result for this item
    size: int  # embedder.size(prepared): tokens (items of similar size batch together)
    kind: Kind
    future: asyncio.Future[np.ndarray]
    enqueued: float  # time.monotonic() at submit


@dataclass(slots=True)
class BatcherMetrics:
    """Counters of one batcher since start; ``recent`` holds (finish time, items) of recent batches."""

    items_total: int = 0
    batches_total: int = 0
    rejected_total: int = 0
    failed_items_total: int = 0
    forward_seconds_total: float = 0.0
    batch_sizes: collections.Counter[int] = field(default_factory=collections.Counter)
    recent: collections.deque[tuple[float, int]] = field(
        default_factory=lambda: collections.deque(maxlen=1024))

    def items_per_s(self, window_s: float = 30.0) -> float:
        now = time.monotonic()
        done = [(t, n) for t, n in self.recent if now - t <= window_s]
        if not done:
            return 0.0
        span = max(now - done[0][0], 1e-3) if len(done) > 1 else window_s
        return sum(n for _, n in done) / span


class DynamicBatcher:
    """Lifecycle: construct, ``await start()`` inside the running event loop (starts the worker
    task and its thread), ``await submit(items, kind)`` from any number of tasks, ``await stop()``
    at shutdown (pending requests fail with Unavailable)."""

    def __init__(self, embedder: Embedder, config: BatchingConfig, bucket: BucketFn | None = None) -> None:
        self.embedder = embedder
        self.config = config
        self.max_batch = max(1, min(config.max_batch, embedder.max_batch))
        self.bucket = bucket or bucket_for(embedder, config)
        self.metrics = BatcherMetrics()
        self._queues: dict[tuple[Kind, Hashable], collections.deque[_Pending]] = {}
        self._depth = 0
        self._wakeup = asyncio.Event()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix=f"embed-{embedder.spec}")
        self.threads = ThreadPicker(candidates(config.torch_threads))
        self._prepare_lock = threading.Lock()
        self._task: asyncio.Task[None] | None = None
        self._closed = False

    @property
    def queue_depth(self) -> int:
        return self._depth

    async def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        self._closed = True
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for queue in self._queues.values():
            for p in queue:
                if not p.future.done():
                    p.future.set_exception(Unavailable(f"{self.embedder.spec} is shutting down"))
        self._queues.clear()
        self._depth = 0
        self._executor.shutdown(wait=False, cancel_futures=True)

    def retry_after(self) -> float:
        """Seconds until the queue has likely drained, from the recent throughput (0.1..30)."""
        rate = self.metrics.items_per_s()
        return min(30.0, max(0.1, self._depth / rate if rate > 0 else 1.0))

    async def submit(self, items: Sequence[Item], kind: Kind = "document",
                     prepared: Sequence[Any] | None = None) -> list[np.ndarray]:
        """Queue items (already validated and decoded) and wait for their vectors, in order.

        ``prepared``: ``embedder.prepare(items, kind)`` when the caller made it (e.g. on the thread
        that decoded the images); else it is made here, on the event loop. An item the
        preprocessing refuses fails this request (InvalidInput) before anything is queued."""
        if self._closed or self._task is None:
            raise Unavailable(f"{self.embedder.spec} is not running")
        if self._depth + len(items) > self.config.queue_size:
            self.metrics.rejected_total += 1
            raise Overloaded(f"{self.embedder.spec}: {self._depth} items queued (limit "
                             f"{self.config.queue_size}); retry later", retry_after=self.retry_after())
        if prepared is None:
            prepared = self.prepare(items, kind)
        if len(prepared) != len(items):
            raise RuntimeError(f"{self.embedder.spec} prepared {len(prepared)} of {len(items)} items")
        loop = asyncio.get_running_loop()
        now = time.monotonic()
        futures = []
        for item, ready in zip(items, prepared, strict=True):
            p = _Pending(item, ready, self.embedder.size(ready), kind, loop.create_future(), now)
            self._queues.setdefault((kind, self.bucket(item)), collections.deque()).append(p)
            futures.append(p.future)
        self._depth += len(items)
        self._wakeup.set()
        return list(await asyncio.gather(*futures))

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        """``embedder.prepare`` from any thread, one call at a time (a tokenizer's padding and
        truncation settings are state: fast tokenizers refuse concurrent calls). A refusal of the
        preprocessing (ValueError/TypeError) becomes InvalidInput."""
        with self._prepare_lock:
            try:
                return self.embedder.prepare(items, kind)
            except Exception as exc:
                raise as_item_error(exc, self.embedder.spec) from exc

    def _oldest_queue(self) -> tuple[Kind, Hashable]:
        return min(self._queues, key=lambda k: self._queues[k][0].enqueued)

    async def _next_batch(self) -> list[_Pending]:
        while not self._queues:
            self._wakeup.clear()
            await self._wakeup.wait()
        key = self._oldest_queue()
        queue = self._queues[key]
        deadline = queue[0].enqueued + self.config.max_wait_ms / 1000
        while len(queue) < self.max_batch and (remaining := deadline - time.monotonic()) > 0:
            self._wakeup.clear()
            try:
                await asyncio.wait_for(self._wakeup.wait(), remaining)
            except TimeoutError:
                break
        batch = self._take(queue)
        if not queue:
            del self._queues[key]
        self._depth -= len(batch)
        return [p for p in batch if not p.future.done()]  # drop requests whose caller went away

    def _take(self, queue: collections.deque[_Pending]) -> list[_Pending]:
        """The next batch of one bucket. All of it when it fits one batch; else ``max_batch`` items
        of similar size (tokens) from its oldest ``SORT_WINDOW`` batches' worth, always including
        the oldest item (so none waits forever), so that short texts are not padded to long ones."""
        if len(queue) <= self.max_batch:
            batch = list(queue)
            queue.clear()
            return batch
        window = [queue[i] for i in range(min(len(queue), self.max_batch * SORT_WINDOW))]
        order = sorted(range(len(window)), key=lambda i: (window[i].size, i))
        oldest = order.index(0)
        start = max(0, min(oldest - self.max_batch // 2, len(window) - self.max_batch))
        chosen = set(order[start : start + self.max_batch])
        rest = [p for i, p in enumerate(window) if i not in chosen] + list(queue)[len(window):]
        queue.clear()
        queue.extend(rest)
        return [window[i] for i in sorted(chosen)]

    async def _loop(self) -> None:
        while True:
            batch = await self._next_batch()
            try:
                if batch:
                    await self._execute(batch)
            except Exception as exc:  # a bug here must not leave later requests waiting forever
                log.exception("batch of %d for %s failed", len(batch), self.embedder.spec)
                for p in batch:
                    _fail(p.future, exc)

    def _compute(self, items: list[Any], kind: Kind, tokens: int) -> list[np.ndarray]:
        """On the forward thread: the forward with the thread count the picker chooses, timed for it."""
        threads = self.threads.choose(len(items))
        set_torch_threads(threads)
        start = time.perf_counter()
        vecs = self.embedder.compute(items, kind)
        self.threads.record(len(items), threads, time.perf_counter() - start, tokens)
        return vecs

    async def _forward(self, batch: list[_Pending]) -> list[np.ndarray]:
        loop = asyncio.get_running_loop()
        items, tokens = [p.prepared for p in batch], len(batch) * max(p.size for p in batch)
        vecs = await loop.run_in_executor(self._executor, self._compute, items, batch[0].kind, tokens)
        if len(vecs) != len(items):
            raise RuntimeError(f"{self.embedder.spec} returned {len(vecs)} vectors for {len(items)} items")
        return vecs

    async def _execute(self, batch: list[_Pending]) -> None:
        start = time.monotonic()
        try:
            vecs = await self._forward(batch)
            for p, v in zip(batch, vecs, strict=True):
                _resolve(p.future, v)
        except Exception as exc:
            if len(batch) == 1:
                self.metrics.failed_items_total += 1
                _fail(batch[0].future, as_item_error(exc, self.embedder.spec))
            else:
                await self._execute_one_by_one(batch)
        done = time.monotonic()
        self.metrics.forward_seconds_total += done - start
        self.metrics.batches_total += 1
        self.metrics.items_total += len(batch)
        self.metrics.batch_sizes[len(batch)] += 1
        self.metrics.recent.append((done, len(batch)))

    async def _execute_one_by_one(self, batch: list[_Pending]) -> None:
        for p in batch:
            try:
                _resolve(p.future, (await self._forward([p]))[0])
            except Exception as exc:
                self.metrics.failed_items_total += 1
                _fail(p.future, as_item_error(exc, self.embedder.spec))

    def snapshot(self) -> dict[str, Any]:
        """Metrics as plain data: queue depth, counters, batch size histogram, items/s."""
        m = self.metrics
        return {"queue_depth": self._depth, "queue_size": self.config.queue_size, "max_batch": self.max_batch,
                "items_total": m.items_total, "batches_total": m.batches_total,
                "rejected_total": m.rejected_total, "failed_items_total": m.failed_items_total,
                "forward_seconds_total": round(m.forward_seconds_total, 6),
                "batch_size_histogram": dict(sorted(m.batch_sizes.items())),
                "torch_threads": self.threads.snapshot(),
                "items_per_s": round(m.items_per_s(), 3)}


def as_item_error(exc: Exception, spec: str) -> Exception:
    """A processor refusing one item (ValueError/TypeError) is that item's fault: InvalidInput."""
    if isinstance(exc, ValueError | TypeError) and not isinstance(exc, InvalidInput):
        return InvalidInput(f"{spec} could not embed this item: {exc}")
    return exc


def _resolve(future: asyncio.Future[np.ndarray], value: np.ndarray) -> None:
    if not future.done():
        future.set_result(value)


def _fail(future: asyncio.Future[np.ndarray], exc: Exception) -> None:
    if not future.done():
        future.set_exception(exc)
