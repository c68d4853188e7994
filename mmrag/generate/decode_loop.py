"""Continuous batching for the in-process backend: one thread runs prefill and decode steps.

Lifecycle: ``DecodeLoop(model, eos_ids)`` starts a daemon thread; ``submit(seq)`` enqueues a
prepared sequence (prompt embeddings with visual features already placed); the loop prefills
new sequences one at a time (each gets its first token immediately), merges their KV into the
running batch (left padding + attention mask) and decodes every running sequence in one forward
per step. Tokens go to each sequence's queue; ``None`` ends it. ``close()`` stops the thread.

Vision encoding never runs here: it happens on the encoder threads, so one request's encoder
work overlaps the prefill/decode of the others.

The loop keeps a :class:`ComputeLedger` of what it actually ran, read off the tensors it fed
the model (prompt lengths, tokens decoded, real tokens resident in the KV cache at every
forward), so that audits of admission do not rest on admission's own bookkeeping.
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import torch
from transformers import DynamicCache


@dataclass(slots=True)
class ComputeLedger:
    """What the loop computed, observed on the model's inputs (reset between measurements)."""

    forwards: int = 0  # model forwards (prefills + decode steps)
    kv_tokens: list[int] = field(default_factory=list)  # real tokens resident in KV during each forward
    prefilled: dict[str, int] = field(default_factory=dict)  # request id -> prompt tokens prefilled
    decoded: dict[str, int] = field(default_factory=dict)  # request id -> tokens the model produced for it

    @property
    def peak_kv_tokens(self) -> int:
        return max(self.kv_tokens, default=0)

    def reset(self) -> None:
        self.forwards = 0
        self.kv_tokens.clear()
        self.prefilled.clear()
        self.decoded.clear()


@dataclass(slots=True)
class Sequence:
    """One request inside the loop."""

    inputs_embeds: torch.Tensor  # (1, L, H) prompt embeddings, visual features placed
    position_ids: torch.Tensor  # (3, 1, L) M-RoPE positions
    next_pos: int  # text position of the first generated token
    max_new_tokens: int
    temperature: float = 0.0
    out: queue.Queue[int | BaseException | None] = field(default_factory=queue.Queue)
    cancelled: bool = False  # set by the consumer; the loop drops the sequence
    prefill_s: float = 0.0
    generated: int = 0
    last_token: int = 0
    request_id: str = ""  # for the ledger


def _pad_left(t: torch.Tensor, length: int) -> torch.Tensor:
    """Left-pad the sequence axis (-2) of a KV tensor (B, heads, T, D) to ``length`` with zeros."""
    pad = length - t.shape[-2]
    if pad == 0:
        return t
    zeros = t.new_zeros(*t.shape[:-2], pad, t.shape[-1])
    return torch.cat([zeros, t], dim=-2)


def _layers(cache: DynamicCache) -> list[Any]:
    """The per-layer KV holders (``keys``/``values`` of shape (B, kv_heads, T, head_dim))."""
    return list(cache.layers)


class KVBatch:
    """Running sequences' KV caches merged along the batch axis, left-padded to one length."""

    def __init__(self) -> None:
        self.cache: DynamicCache | None = None
        self.mask: torch.Tensor | None = None  # (B, T) 1 = real token, 0 = left pad

    def join(self, cache: DynamicCache, length: int) -> None:
        """Append one sequence (its own prefill cache of ``length`` tokens) as the last row."""
        own_mask = torch.ones(1, length, dtype=torch.long)
        if self.cache is None or self.mask is None:
            self.cache, self.mask = cache, own_mask
            return
        total = max(self.mask.shape[1], length)
        for mine, theirs in zip(_layers(self.cache), _layers(cache), strict=True):
            mine.keys = torch.cat([_pad_left(mine.keys, total), _pad_left(theirs.keys, total)])
            mine.values = torch.cat([_pad_left(mine.values, total), _pad_left(theirs.values, total)])
        pad = lambda m: torch.cat([m.new_zeros(m.shape[0], total - m.shape[1]), m], dim=1)  # noqa: E731
        self.mask = torch.cat([pad(self.mask), pad(own_mask)])

    def keep(self, rows: list[int]) -> None:
        """Keep only ``rows`` (drop finished sequences) and trim all-padding columns."""
        if not rows:
            self.cache, self.mask = None, None
            return
        assert self.cache is not None and self.mask is not None
        index = torch.tensor(rows)
        mask = self.mask[index]
        start = int((mask.sum(0) == 0).long().cumprod(0).sum())  # leading columns that are all pad
        for layer in _layers(self.cache):
            layer.keys = layer.keys[index, :, start:]
            layer.values = layer.values[index, :, start:]
        self.mask = mask[:, start:]


class DecodeLoop:
    """The thread that owns the language model's compute (see the module docstring)."""

    def __init__(self, model: Any, eos_ids: set[int], max_batch: int = 8) -> None:
        self._model = model
        self._lm = model.model.language_model
        self._eos = eos_ids
        self._max_batch = max_batch
        self._pending: queue.Queue[Sequence] = queue.Queue()
        self._running: list[Sequence] = []
        self._kv = KVBatch()
        self.ledger = ComputeLedger()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="vlm-decode", daemon=True)
        self._thread.start()

    def submit(self, seq: Sequence) -> None:
        self._pending.put(seq)

    def close(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self._admit_new()
                if self._running:
                    self._step()
            except BaseException as exc:  # fail every running sequence, keep the loop alive
                for seq in self._running:
                    seq.out.put(exc)
                self._running, self._kv = [], KVBatch()

    def _admit_new(self) -> None:
        block = not self._running
        while len(self._running) < self._max_batch:
            try:
                seq = self._pending.get(timeout=0.05) if block else self._pending.get_nowait()
            except queue.Empty:
                return
            block = False
            if seq.cancelled:
                continue
            try:
                self._prefill(seq)
            except Exception as exc:  # this sequence fails alone; the running batch is untouched
                seq.out.put(exc)

    @torch.inference_mode()
    def _prefill(self, seq: Sequence) -> None:
        t0 = time.perf_counter()
        cache = DynamicCache(config=self._lm.config)
        length = seq.inputs_embeds.shape[1]
        self._record(length)  # the running batch's KV stays resident while this prompt prefills
        self.ledger.prefilled[seq.request_id] = self.ledger.prefilled.get(seq.request_id, 0) + length
        out = self._lm(
            inputs_embeds=seq.inputs_embeds,
            position_ids=seq.position_ids,
            attention_mask=torch.ones(1, length, dtype=torch.long),
            cache=cache,
            use_cache=True,
        )
        logits = self._model.lm_head(out.last_hidden_state[:, -1])  # (1, vocab)
        seq.prefill_s = time.perf_counter() - t0
        token = int(self._sample(logits, [seq])[0])
        self.ledger.decoded[seq.request_id] = self.ledger.decoded.get(seq.request_id, 0) + 1
        if self._emit(seq, token):
            self._running.append(seq)
            self._kv.join(cache, length)

    @torch.inference_mode()
    def _step(self) -> None:
        assert self._kv.cache is not None and self._kv.mask is not None
        seqs = self._running
        tokens = torch.tensor([[s.last_token] for s in seqs])  # (B, 1)
        embeds = self._lm.embed_tokens(tokens)  # (B, 1, H)
        pos = torch.tensor([s.next_pos for s in seqs]).view(1, -1, 1).expand(3, -1, -1)  # (3, B, 1)
        mask = torch.cat([self._kv.mask, self._kv.mask.new_ones(len(seqs), 1)], dim=1)  # (B, T + 1)
        self._record(0, mask)
        for s in seqs:
            self.ledger.decoded[s.request_id] = self.ledger.decoded.get(s.request_id, 0) + 1
        out = self._lm(
            inputs_embeds=embeds, position_ids=pos, attention_mask=mask, cache=self._kv.cache, use_cache=True
        )
        self._kv.mask = mask
        for s in seqs:
            s.next_pos += 1  # the token just fed sat at next_pos
        logits = self._model.lm_head(out.last_hidden_state[:, -1])  # (B, vocab)
        keep = [
            i for i, (s, t) in enumerate(zip(seqs, self._sample(logits, seqs), strict=True)) if self._emit(s, int(t))
        ]
        if len(keep) < len(seqs):
            self._running = [seqs[i] for i in keep]
            self._kv.keep(keep)

    def _record(self, extra: int, mask: torch.Tensor | None = None) -> None:
        """One forward: real tokens in the KV it attends over (the mask's ones) + ``extra`` new ones."""
        mask = self._kv.mask if mask is None else mask
        self.ledger.forwards += 1
        self.ledger.kv_tokens.append(extra + (int(mask.sum()) if mask is not None else 0))

    def _emit(self, seq: Sequence, token: int) -> bool:
        """Deliver a token; False when the sequence is done (eos, length, cancelled)."""
        if seq.cancelled:
            seq.out.put(None)
            return False
        done = token in self._eos
        if not done:
            seq.out.put(token)
            seq.generated += 1
            seq.last_token = token
        if done or seq.generated >= seq.max_new_tokens:
            seq.out.put(None)
            return False
        return True

    @staticmethod
    def _sample(logits: torch.Tensor, seqs: list[Sequence]) -> list[int]:
        out = []
        for row, seq in zip(logits.float(), seqs, strict=True):
            if seq.temperature <= 0:
                out.append(int(row.argmax()))
            else:
                out.append(int(torch.multinomial(torch.softmax(row / seq.temperature, -1), 1)))
        return out
