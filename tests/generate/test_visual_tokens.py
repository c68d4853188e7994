"""Visual-token accounting against the real transformers image processors (built offline)."""

from __future__ import annotations

import pytest
from PIL import Image
from transformers import Idefics3ImageProcessor, Qwen2VLImageProcessor, SiglipImageProcessor

from mmrag.errors import InvalidInput
from mmrag.generate.visual_tokens import (
    FixedVisualTokenizer,
    QwenVisualTokenizer,
    TiledVisualTokenizer,
    split_budget,
    tokenizer_for,
)

SHAPES = [
    (3024, 4032),
    (4032, 3024),
    (1654, 2339),
    (2339, 1654),
    (640, 480),
    (28, 28),
    (10, 900),
    (900, 10),
    (56, 57),
    (1, 150),
    (1700, 2200),
    (512, 512),
    (333, 777),
    (1280, 720),
    (2480, 3508),
    (100, 3000),
    (4000, 60),
    (29, 29),
    (1000, 1001),
    (13, 2000),
]


def test_qwen_photo_is_1230_tokens() -> None:
    plan = QwenVisualTokenizer().plan(3024, 4032)
    assert plan.tokens == 1230 and plan.grid_thw == (1, 82, 60)


@pytest.mark.parametrize(
    ("min_pixels", "max_pixels"),
    [(56 * 56, 1280 * 28 * 28), (256 * 28 * 28, 1024 * 28 * 28), (4 * 28 * 28, 64 * 28 * 28)],
)
def test_qwen_matches_processor(min_pixels: int, max_pixels: int) -> None:
    proc = Qwen2VLImageProcessor(min_pixels=min_pixels, max_pixels=max_pixels)
    acc = QwenVisualTokenizer(min_pixels=min_pixels, max_pixels=max_pixels)
    for w, h in SHAPES:
        if max(w, h) / min(w, h) > 200:
            continue
        out = proc(images=[Image.new("RGB", (w, h))], return_tensors="pt")
        t, gh, gw = out["image_grid_thw"][0].tolist()
        plan = acc.plan(w, h)
        assert plan.grid_thw == (t, gh, gw), (w, h)
        assert plan.tokens == t * gh * gw // 4 == out["pixel_values"].shape[0] // 4, (w, h)


@pytest.mark.parametrize("budget", [4, 64, 280, 560, 1120])
def test_qwen_budget_is_applied_by_resizing(budget: int) -> None:
    acc = QwenVisualTokenizer()
    for w, h in SHAPES[:12]:
        try:
            plan = acc.plan(w, h, budget)
        except InvalidInput:  # only a strip too thin for the budget may be refused
            assert max(w, h) / min(w, h) > budget, (w, h, budget)
            continue
        assert plan.tokens <= budget
        size = {"shortest_edge": acc.min_pixels, "longest_edge": plan.max_pixels}
        out = Qwen2VLImageProcessor()(images=[Image.new("RGB", (w, h))], size=size, return_tensors="pt")
        assert out["pixel_values"].shape[0] // 4 == plan.tokens, (w, h, budget)


def test_qwen_budget_below_min_pixels_is_refused() -> None:
    with pytest.raises(InvalidInput, match="below this model's minimum"):
        QwenVisualTokenizer(min_pixels=256 * 28 * 28).plan(1000, 1000, 100)


def test_qwen_extreme_aspect_ratio_is_refused() -> None:
    with pytest.raises(InvalidInput, match="200:1"):
        QwenVisualTokenizer().plan(1, 300)


def test_fixed_family_matches_siglip_processor() -> None:
    proc = SiglipImageProcessor(size={"height": 224, "width": 224})
    acc = FixedVisualTokenizer(224, 14)
    for w, h in SHAPES[:6]:
        pixels = proc(images=[Image.new("RGB", (w, h))], return_tensors="pt")["pixel_values"]
        assert acc.plan(w, h).tokens == (pixels.shape[-2] // 14) * (pixels.shape[-1] // 14) == 256
    with pytest.raises(InvalidInput, match="always costs 256"):
        acc.plan(100, 100, 200)


@pytest.mark.parametrize(("edge", "tile", "seq"), [(4 * 364, 364, 169), (3 * 364, 364, 169), (4 * 512, 512, 64)])
def test_tiled_family_matches_idefics3_processor(edge: int, tile: int, seq: int) -> None:
    proc = Idefics3ImageProcessor(size={"longest_edge": edge}, max_image_size={"longest_edge": tile})
    acc = TiledVisualTokenizer(edge, tile, seq)
    for w, h in SHAPES:
        if min(w, h) < 2:
            continue
        out = proc(images=[[Image.new("RGB", (w, h))]], return_tensors="pt", return_row_col_info=True)
        crops = out["pixel_values"].shape[1]
        tiles, rows, cols = acc.tiles_for(w, h, edge)
        assert (tiles, rows, cols) == (crops, out["rows"][0][0], out["cols"][0][0]), (w, h)
        assert acc.plan(w, h).tokens == crops * seq


def test_tiled_budget_lowers_the_tile_count() -> None:
    acc = TiledVisualTokenizer()
    full = acc.plan(3024, 4032)
    small = acc.plan(3024, 4032, 1000)
    assert full.tokens > 1000 >= small.tokens and small.longest_edge is not None
    proc = Idefics3ImageProcessor(size={"longest_edge": small.longest_edge})
    out = proc(images=[[Image.new("RGB", (3024, 4032))]], return_tensors="pt")
    assert out["pixel_values"].shape[1] * 169 == small.tokens


def test_split_budget() -> None:
    assert split_budget(5, 1280, 1280, 64) == (5, 256)
    assert split_budget(5, 100, 1280, 64) == (1, 100)
    assert split_budget(3, 10_000, 1280, 64) == (3, 1280)
    assert split_budget(3, 10, 1280, 64) == (0, 0)
    assert split_budget(0, 1000, 1280, 64) == (0, 0)


def test_tokenizer_for_names() -> None:
    assert tokenizer_for("qwen2_5_vl").family == "qwen2_5_vl"
    assert tokenizer_for("smolvlm").min_tokens == 64
    with pytest.raises(InvalidInput, match="allowed"):
        tokenizer_for("llava")
