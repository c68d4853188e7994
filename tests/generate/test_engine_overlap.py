"""Engine scheduling with a fake backend whose stages wait (like a device): encode overlaps generate."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence

from mmrag.generate.base import (
    EncodedImage,
    GenerationRequest,
    ImageInput,
    RequestTimings,
    VLMBackend,
    image_input,
)
from mmrag.generate.engine import VLMEngine
from mmrag.generate.visual_tokens import QwenVisualTokenizer
from mmrag.vlm_config import VLMConfig
from tests.generate.conftest import png_bytes

STAGE_S = 0.15


class WaitingBackend(VLMBackend):
    """encode and generate each wait STAGE_S (no CPU), as work on a device would."""

    model_id, revision, dtype = "fake", "", "float32"
    local_encoder = True
    overlaps_encoder = True

    def __init__(self) -> None:
        self.accounting = QwenVisualTokenizer()
        self.encoded = 0

    def encode(self, image: ImageInput) -> EncodedImage:
        time.sleep(STAGE_S)
        self.encoded += 1
        return EncodedImage(self.cache_key(image), image.plan.tokens, features=None, nbytes=64, encode_s=STAGE_S)

    def generate(
        self, request: GenerationRequest, images: Sequence[EncodedImage], timings: RequestTimings
    ) -> Iterator[str]:
        time.sleep(STAGE_S)
        timings.new_tokens = 2
        yield "a"
        yield "b"

    def count_text_tokens(self, request: GenerationRequest) -> int:
        return 10


def requests(n: int, tag: str) -> list[GenerationRequest]:
    acc = QwenVisualTokenizer()
    return [
        GenerationRequest(f"{tag}{i}", "q", [image_input(png_bytes(64, 64, seed=100 * len(tag) + i), acc, 64)])
        for i in range(n)
    ]


def test_encoder_work_overlaps_generation_of_other_requests() -> None:
    engine = VLMEngine(WaitingBackend(), VLMConfig(backend="none", encoder_cache_bytes=0))
    t0 = time.perf_counter()
    for r in requests(4, "s"):
        assert "".join(engine.start(r)) == "ab"
    serial = time.perf_counter() - t0

    streams = [engine.start(r) for r in requests(4, "oo")]
    t0 = time.perf_counter()
    threads = [threading.Thread(target=lambda s=s: list(s)) for s in streams]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    overlapped = time.perf_counter() - t0
    assert serial >= 8 * STAGE_S * 0.95
    assert overlapped < 0.75 * serial, (overlapped, serial)  # ideal: (4 + 1) / 8 of serial
    engine.close()


def test_a_page_is_encoded_once_within_and_across_requests() -> None:
    backend = WaitingBackend()
    engine = VLMEngine(backend, VLMConfig(backend="none"))
    image = requests(1, "x")[0].images[0]
    t1, t2 = RequestTimings(), RequestTimings()
    list(engine.start(GenerationRequest("a", "q", [image, image]), t1))
    list(engine.start(GenerationRequest("b", "q", [image, image]), t2))
    assert backend.encoded == 1
    assert (t1.cache_misses, t1.cache_hits, t2.cache_misses, t2.cache_hits) == (1, 1, 0, 2)
    assert engine.cache.stats().entries == 1 and engine.admission.used_tokens == 0
