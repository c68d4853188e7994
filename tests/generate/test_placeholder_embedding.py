"""Placeholder-embedded visual tokens on a tiny random Qwen2.5-VL: exactness and batching."""

from __future__ import annotations

import io

import pytest
import torch
from PIL import Image

from mmrag.generate.base import GenerationRequest, RequestTimings, image_input
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.vlm_config import VLMConfig
from tests.generate.conftest import png_bytes


def test_cached_path_logits_equal_the_processor_path(backend: TransformersBackend) -> None:
    data = png_bytes(300, 420, seed=1)
    image = image_input(data, backend.accounting, 64)
    request = GenerationRequest("r", "Describe the image.", [image])
    encoded = backend.encode(image)
    cached = backend.encode(image)  # what the cache would return: same features
    ids, embeds, pos, _ = backend.prompt_inputs(request, [cached])

    # reference: the processor expands the placeholders and the model encodes pixel_values itself
    proc = backend.processor
    prompt = proc.apply_chat_template(
        [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": request.prompt}]}],
        add_generation_prompt=True,
        tokenize=False,
    )
    rgb = Image.open(io.BytesIO(data)).convert("RGB")
    size = {"shortest_edge": backend.accounting.min_pixels, "longest_edge": image.plan.max_pixels}
    inputs = proc(text=[prompt], images=[rgb], images_kwargs={"size": size}, return_tensors="pt")
    assert torch.equal(inputs["input_ids"], ids)  # our placeholder expansion == the processor's
    model = backend.model
    with torch.inference_mode():
        model.model.rope_deltas = None
        ref = model(**inputs).logits  # (1, L, vocab)
        out = model.model.language_model(inputs_embeds=embeds, position_ids=pos, attention_mask=torch.ones_like(ids))
        ours = model.lm_head(out.last_hidden_state)
        assert torch.equal(encoded.features, cached.features)
        assert torch.equal(ours, ref), (ours - ref).abs().max()
        # without M-RoPE position ids the logits differ: the test can fail
        plain = model.model.language_model(inputs_embeds=embeds, attention_mask=torch.ones_like(ids))
        assert not torch.equal(model.lm_head(plain.last_hidden_state), ref)


def test_engine_cache_hit_generates_the_same_tokens(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    engine = VLMEngine(backend, vlm_config)
    image = image_input(png_bytes(200, 260, seed=2), backend.accounting, 64)

    def run(rid: str) -> tuple[str, RequestTimings]:
        t = RequestTimings()
        text = "".join(engine.start(GenerationRequest(rid, "Describe the image.", [image], max_new_tokens=6), t))
        return text, t

    cold_text, cold = run("a")
    warm_text, warm = run("b")
    assert cold_text == warm_text and cold.new_tokens == 6
    assert (cold.cache_misses, cold.cache_hits, warm.cache_misses, warm.cache_hits) == (1, 0, 0, 1)
    assert cold.encoder_s > 0 and warm.encoder_s == 0 and warm.ttft_s > 0 and cold.prefill_s > 0
    assert engine.cache.stats().hits == 1 and engine.admission.used_tokens == 0
    assert cold.visual_tokens == image.plan.tokens


def test_batched_decode_matches_solo_decode(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    engine = VLMEngine(backend, vlm_config)
    reqs = [
        GenerationRequest(
            f"r{i}",
            q,
            [image_input(png_bytes(150 + 40 * i, 200, seed=i), backend.accounting, 32)] if i % 2 else [],
            max_new_tokens=8,
        )
        for i, q in enumerate(["What is the revenue?", "Describe the image.", "A chart?", "Table of contents"])
    ]
    solo = ["".join(engine.start(r)) for r in reqs]
    streams = [engine.start(r) for r in reqs]  # all submitted: the loop decodes them together
    together = ["".join(s) for s in streams]
    assert together == solo


def test_budget_is_released_when_a_stream_is_dropped(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    engine = VLMEngine(backend, vlm_config)
    stream = engine.start(GenerationRequest("x", "Describe the image.", max_new_tokens=50))
    next(stream)
    assert engine.admission.used_tokens > 0
    stream.close()
    assert engine.admission.used_tokens == 0
    unstarted = engine.start(GenerationRequest("y", "Describe the image.", max_new_tokens=5))
    unstarted.close()
    assert engine.admission.used_tokens == 0 and engine.admission.queued == 0


def test_loads_through_the_hub_code_path(vlm_config: VLMConfig) -> None:
    from mmrag.errors import NotFound

    with pytest.raises(NotFound, match="cannot be loaded"):
        TransformersBackend.load(vlm_config.model_copy(update={"model": "/nonexistent/Qwen2.5-VL-3B"}))


def test_a_failing_prefill_fails_only_its_request(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    from mmrag.generate.decode_loop import Sequence

    bad = Sequence(torch.zeros(1, 3, 7), torch.zeros(3, 1, 3, dtype=torch.long), 3, 4)  # wrong hidden size
    backend._loop.submit(bad)
    assert isinstance(bad.out.get(timeout=30), BaseException)
    engine = VLMEngine(backend, vlm_config)
    timings = RequestTimings()
    list(engine.start(GenerationRequest("ok", "Describe the image.", max_new_tokens=3), timings))
    assert timings.ttft_s > 0 and engine.admission.used_tokens == 0
