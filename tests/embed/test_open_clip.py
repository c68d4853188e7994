"""open_clip backend on a tiny random-weight CLIP saved to disk and loaded by spec."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import numpy as np
import open_clip
import pytest
import torch
from PIL import Image

from mmrag.embed.base import Embedder, EmbedderOptions, load_embedder
from mmrag.embed.open_clip_backend import parse_open_clip_name
from mmrag.errors import InvalidInput, Unavailable
from tests.fixtures.tiny_models import TINY_CLIP_CONFIG, TINY_CLIP_NAME


def test_vectors_are_normalised_and_deterministic(clip_spec: str, load: Callable[[str], Embedder],
                                                  images: list[Image.Image]) -> None:
    clip = load(clip_spec)
    assert clip.dim == TINY_CLIP_CONFIG["embed_dim"] and not clip.multivector
    items = ["a chart of revenue", images[0], "the quick brown fox", images[1]]
    out = clip.embed_batch(items)
    assert [v.shape for v in out] == [(clip.dim,)] * 4 and all(v.dtype == np.float32 for v in out)
    np.testing.assert_allclose([np.linalg.norm(v) for v in out], 1.0, atol=1e-5)
    again = clip.embed_batch(items)
    for a, b in zip(out, again, strict=True):
        np.testing.assert_array_equal(a, b)
    # batch composition does not change a vector
    np.testing.assert_allclose(clip.embed(images[1]), out[3], atol=1e-5)
    assert not np.allclose(out[1], out[3])


def test_equals_direct_open_clip_computation(clip_spec: str, tiny_clip_dir: Path,
                                             load: Callable[[str], Embedder],
                                             images: list[Image.Image]) -> None:
    model, _, preprocess = open_clip.create_model_and_transforms(f"local-dir:{tiny_clip_dir / 'local'}")
    model.eval()
    tokenizer = open_clip.get_tokenizer(f"local-dir:{tiny_clip_dir / 'local'}")
    with torch.no_grad():
        img = model.encode_image(torch.stack([preprocess(images[2])]))
        txt = model.encode_text(tokenizer(["pipeline diagram"]))
    img = (img / img.norm(dim=-1, keepdim=True))[0].numpy()
    txt = (txt / txt.norm(dim=-1, keepdim=True))[0].numpy()
    clip = load(clip_spec)
    np.testing.assert_allclose(clip.embed(images[2]), img, atol=1e-5)
    np.testing.assert_allclose(clip.embed("pipeline diagram", "query"), txt, atol=1e-5)


def test_named_config_with_weights_file_loads_the_same_model(tiny_clip_dir: Path, clip_spec: str,
                                                            load: Callable[[str], Embedder]) -> None:
    open_clip.add_model_config(tiny_clip_dir / "configs")
    by_file = load(f"open_clip:{TINY_CLIP_NAME}/{tiny_clip_dir / 'tiny-clip.safetensors'}")
    np.testing.assert_allclose(by_file.embed("hello"), load(clip_spec).embed("hello"), atol=1e-6)
    random = load_embedder(f"open_clip:{TINY_CLIP_NAME}/none")  # explicit random init differs
    assert not np.allclose(random.embed("hello"), by_file.embed("hello"), atol=1e-3)


@pytest.mark.parametrize("spec", ["open_clip:ViT-B-32/laion2b_s34b_b79k", "open_clip:ViT-B-16-SigLIP/webli",
                                  "open_clip:ViT-B-32//no/such/weights.safetensors",
                                  "open_clip:local-dir:/no/such/dir", "open_clip:no-such-model/none"])
def test_missing_weights_or_offline_hub_raise_unavailable(spec: str) -> None:
    with pytest.raises(Unavailable, match="cannot load open_clip model"):
        load_embedder(spec, EmbedderOptions(device="cpu"))


def test_spec_parsing_and_devices() -> None:
    assert parse_open_clip_name("ViT-B-32/laion2b_s34b_b79k") == ("ViT-B-32", "laion2b_s34b_b79k")
    assert parse_open_clip_name("ViT-B-32//abs/w.safetensors") == ("ViT-B-32", "/abs/w.safetensors")
    assert parse_open_clip_name("ViT-B-32/none") == ("ViT-B-32", None)
    assert parse_open_clip_name("hf-hub:org/repo") == ("hf-hub:org/repo", None)
    with pytest.raises(InvalidInput, match="pretrained"):
        parse_open_clip_name("ViT-B-32")
