"""The decode loop's ComputeLedger: what the model actually ran, for audits independent of admission."""

from __future__ import annotations

from mmrag.generate.base import GenerationRequest, RequestTimings, image_input
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.vlm_config import VLMConfig
from tests.generate.conftest import png_bytes


def test_ledger_counts_prefilled_and_produced_tokens(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    engine = VLMEngine(backend, vlm_config)
    backend.ledger.reset()
    image = image_input(png_bytes(150, 200), backend.accounting, 32)
    requests = [GenerationRequest("text", "What is the revenue?", max_new_tokens=5),
                GenerationRequest("image", "Describe the image.", [image], max_new_tokens=7)]
    timings = {r.request_id: RequestTimings() for r in requests}
    streams = [engine.start(r, timings[r.request_id]) for r in requests]  # decoded together
    for s in streams:
        list(s)
    ledger = backend.ledger
    for r in requests:
        t = timings[r.request_id]
        assert ledger.prefilled[r.request_id] == t.prompt_tokens  # the prompt tensor the model ran
        # every streamed token was produced; an end-of-sequence token is produced but not streamed
        assert t.new_tokens <= ledger.decoded[r.request_id] <= min(t.new_tokens + 1, r.max_new_tokens)
        assert ledger.prefilled[r.request_id] + ledger.decoded[r.request_id] <= engine.cost(r)[0]
    assert timings["image"].prompt_tokens > image.plan.tokens  # visual tokens are part of the prefill
    # resident KV: at least the larger prompt at its prefill, never more than both requests' whole use
    whole = sum(ledger.prefilled.values()) + sum(ledger.decoded.values())
    assert max(ledger.prefilled.values()) <= ledger.peak_kv_tokens <= whole
    assert ledger.forwards == len(ledger.kv_tokens) >= max(ledger.decoded.values())
    backend.ledger.reset()
    assert ledger.forwards == 0 and not ledger.kv_tokens and not ledger.prefilled
