"""The VLM engine: token-aware admission + encoder cache + encoder threads in front of a backend.

Lifecycle: ``VLMEngine(backend, config)`` once per process; ``start(request)`` costs the request
(text tokens + planned visual tokens + max_new_tokens), submits it to admission (raising
Overloaded at once when the queue is full) and returns an iterator of text deltas. Iterating it
waits for admission (Overloaded after ``queue_timeout_s``), encodes missing images on the encoder
threads (cache hits skip the vision tower), then streams from the backend; the token budget is
released when the iterator finishes or is closed. ``close()`` stops threads and the backend.
"""

from __future__ import annotations

import concurrent.futures as cf
import time
from collections.abc import Callable, Generator, Iterator

from mmrag.errors import Overloaded
from mmrag.generate.admission import AdmissionController, Ticket
from mmrag.generate.base import EncodedImage, GenerationRequest, ImageInput, RequestTimings, VLMBackend
from mmrag.generate.encoder_cache import EncoderCache, EncoderCacheKey
from mmrag.vlm_config import VLMConfig


class EngineStream(Iterator[str]):
    """The text deltas of one request; closing it (or dropping it) frees its admission."""

    def __init__(self, gen: Generator[str, None, None], abandon: Callable[[], None]) -> None:
        self._gen = gen
        self._abandon: Callable[[], None] | None = abandon
        self._started = False

    def __next__(self) -> str:
        self._started = True
        return next(self._gen)

    def close(self) -> None:
        if not self._started and self._abandon is not None:
            self._abandon()
        self._abandon = None
        self._gen.close()

    def __del__(self) -> None:
        self.close()


class VLMEngine:
    """See the module docstring."""

    def __init__(
        self,
        backend: VLMBackend,
        config: VLMConfig,
        *,
        admission: AdmissionController | None = None,
        cache: EncoderCache | None = None,
    ) -> None:
        self.backend = backend
        self.config = config
        self.admission = admission or AdmissionController(
            config.token_budget,
            max_queue_requests=config.max_queue_requests,
            max_queue_tokens=config.max_queue_tokens,
            queue_timeout_s=config.queue_timeout_s,
            starvation_s=config.starvation_s,
            policy=config.admission_policy,
        )
        self.cache = cache if cache is not None else EncoderCache(config.encoder_cache_bytes)
        self._encoders = cf.ThreadPoolExecutor(config.encoder_threads, thread_name_prefix="vlm-encoder")

    def cost(self, request: GenerationRequest) -> tuple[int, int]:
        """``(total token cost, visual tokens)`` of a request, before any GPU work."""
        visual = sum(im.plan.tokens for im in request.images)
        return self.backend.count_text_tokens(request) + visual + request.max_new_tokens, visual

    def start(self, request: GenerationRequest, timings: RequestTimings | None = None) -> EngineStream:
        """Submit to admission now (may raise Overloaded/InvalidInput); iterate for text deltas."""
        timings = timings if timings is not None else RequestTimings()
        t0 = time.perf_counter()
        cost, visual = self.cost(request)
        timings.visual_tokens = visual
        ticket = self.admission.submit(request.request_id, cost, visual)
        return EngineStream(self._run(request, ticket, timings, t0), lambda: self._abandon(ticket))

    def _abandon(self, ticket: Ticket) -> None:
        """A stream closed before its first iteration: leave the queue or give the budget back."""
        if not self.admission.cancel(ticket):
            self.admission.release(ticket)

    def stream(self, request: GenerationRequest, timings: RequestTimings | None = None) -> Iterator[str]:
        """Like :meth:`start`, but admission errors surface on first iteration."""
        yield from self.start(request, timings)

    def _run(
        self, request: GenerationRequest, ticket: Ticket, timings: RequestTimings, t0: float
    ) -> Generator[str, None, None]:
        pinned: list[EncoderCacheKey] = []
        try:
            if not ticket.wait(self.config.queue_timeout_s) and self.admission.cancel(ticket):
                raise Overloaded(
                    f"waited {self.config.queue_timeout_s:.0f}s for the VLM",
                    retry_after=self.admission.retry_after(),
                )
            timings.queue_s = time.perf_counter() - t0
            encoded = self._encode_all(request.images, timings, pinned)
            first: float | None = None
            for delta in self.backend.generate(request, encoded, timings):
                if first is None:
                    first = time.perf_counter()
                    timings.ttft_s = first - t0
                yield delta
            end = time.perf_counter()
            if first is None:  # nothing to stream (e.g. end-of-sequence first): first token = the end
                timings.ttft_s = end - t0
            if first is not None and timings.new_tokens > 1 and end > first:
                timings.decode_tokens_per_s = (timings.new_tokens - 1) / (end - first)
            timings.total_s = end - t0
        finally:
            for key in pinned:
                self.cache.unpin(key)
            self.admission.release(ticket)

    def _encode_all(
        self, images: list[ImageInput], timings: RequestTimings, pinned: list[EncoderCacheKey]
    ) -> list[EncodedImage]:
        """Cached features where present, the rest encoded on the encoder threads (in order)."""
        out: list[EncodedImage | cf.Future[tuple[EncodedImage, float]]] = []
        submitted = time.perf_counter()
        pending: dict[EncoderCacheKey, cf.Future[tuple[EncodedImage, float]]] = {}
        for image in images:
            key = self.backend.cache_key(image)
            hit = self.cache.get(key, pin=True) if self.backend.local_encoder else None
            if hit is not None:
                pinned.append(key)
                timings.cache_hits += 1
                out.append(hit)
            elif key in pending:  # the same page twice in one request: encode once
                timings.cache_hits += 1
                out.append(pending[key])
            else:
                timings.cache_misses += 1
                pending[key] = self._encoders.submit(self._encode_one, image)
                out.append(pending[key])
        result: list[EncodedImage] = []
        first_start: float | None = None
        done: set[int] = set()
        for item in out:
            if isinstance(item, EncodedImage):
                result.append(item)
                continue
            encoded, started = item.result()
            if id(item) in done:
                result.append(encoded)
                continue
            done.add(id(item))
            first_start = started if first_start is None else min(first_start, started)
            timings.preprocess_s += encoded.preprocess_s
            timings.encoder_s += encoded.encode_s
            if self.backend.local_encoder and self.cache.put(encoded.key, encoded, encoded.nbytes, pin=True):
                pinned.append(encoded.key)
            result.append(encoded)
        if first_start is not None:  # time until an encoder worker took the request's first image
            timings.encoder_queue_s = max(0.0, first_start - submitted)
        return result

    def _encode_one(self, image: ImageInput) -> tuple[EncodedImage, float]:
        started = time.perf_counter()
        return self.backend.encode(image), started

    def stats(self) -> dict[str, float]:
        """Cache and admission gauges for /metrics."""
        c = self.cache.stats()
        a = self.admission
        return {
            "encoder_cache_hits": c.hits,
            "encoder_cache_misses": c.misses,
            "encoder_cache_evicted": c.evicted,
            "encoder_cache_bytes": c.bytes_used,
            "encoder_cache_entries": c.entries,
            "admission_used_tokens": a.used_tokens,
            "admission_peak_tokens": a.peak_used,
            "admission_queued": a.queued,
            "admission_budget_tokens": a.token_budget,
        }

    def close(self, *, close_backend: bool = True) -> None:
        """Stop the encoder threads (waiting for running work) and, by default, the backend."""
        self._encoders.shutdown(wait=True, cancel_futures=True)
        if close_backend:
            self.backend.close()
