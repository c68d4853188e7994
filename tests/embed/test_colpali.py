"""ColPali-family backends (colpali-engine ColQwen2/2.5, transformers ColQwen2ForRetrieval) on
tiny random-weight models saved to disk and loaded by spec."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from mmrag.embed.base import Embedder, EmbedderOptions, load_embedder
from mmrag.embed.colpali_backend import choose_architecture
from mmrag.embed.pooling import hierarchical_pool, prefetch_vector
from mmrag.errors import Unavailable

QUERIES = ["What is the revenue in 2023?", "pipeline diagram"]
FAMILY = ["colqwen2", "colqwen2_5", "hf_colqwen2", "hf_colpali"]


def reference(spec: str, images: list[Image.Image]) -> tuple[list[torch.Tensor], list[torch.Tensor], object]:
    """Embeddings computed directly with the model classes, independent of the backend code."""
    path = spec.split(":", 1)[1]
    if spec.startswith("hf:"):
        import transformers

        model_type = json.loads((Path(path) / "config.json").read_text())["model_type"]
        name = {"colqwen2": "ColQwen2", "colpali": "ColPali"}[model_type]
        model = getattr(transformers, f"{name}ForRetrieval").from_pretrained(path).eval()
        proc = getattr(transformers, f"{name}Processor").from_pretrained(path)
        bi, bq = proc.process_images(images=images), proc.process_queries(text=QUERIES)
        with torch.no_grad():
            di, dq = model(**bi).embeddings, model(**bq).embeddings
        mask = bi["input_ids"] == proc.image_token_id
    else:
        import colpali_engine.models as zoo

        arch = json.loads((Path(path) / "config.json").read_text())["architectures"][0]
        model = getattr(zoo, arch).from_pretrained(path).eval()
        proc_name = {"ColQwen2": "ColQwen2Processor", "ColQwen2_5": "ColQwen2_5_Processor"}[arch]
        proc = getattr(zoo, proc_name).from_pretrained(path)
        bi, bq = proc.process_images(images), proc.process_queries(QUERIES)
        with torch.no_grad():
            di, dq = model(**bi), model(**bq)
        mask = proc.get_image_mask(bi)
    docs = [d[m] for d, m in zip(di, mask, strict=True)]
    queries = [q[a.bool()] for q, a in zip(dq, bq["attention_mask"], strict=True)]
    return queries, docs, proc


def image_tokens(emb: Embedder, image: Image.Image) -> int:
    """Rows one page should keep: only its image tokens."""
    image_processor = emb.processor.image_processor  # type: ignore[attr-defined]
    if getattr(image_processor, "image_seq_length", None):  # PaliGemma: a fixed count per image
        return int(image_processor.image_seq_length)
    # Qwen2-VL: (h/14 * w/14) patches as the processor resizes, merged 2x2
    grid = image_processor(images=[image], return_tensors="pt")["image_grid_thw"][0]
    return int(grid.prod()) // 4


@pytest.mark.parametrize("which", FAMILY)
def test_shapes_normalisation_determinism(which: str, multivector_specs: dict[str, str],
                                          load: Callable[[str], Embedder], images: list[Image.Image]) -> None:
    emb = load(multivector_specs[which])
    assert emb.multivector
    docs = emb.embed_batch(images, "document")
    qs = emb.embed_batch(QUERIES, "query")
    for d, img in zip(docs, images, strict=True):
        assert d.shape == (image_tokens(emb, img), emb.dim) and d.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(d, axis=1), 1.0, atol=1e-4)
    assert all(q.ndim == 2 and q.shape[1] == emb.dim and np.isfinite(q).all() for q in qs)
    np.testing.assert_array_equal(emb.embed_batch(images, "document")[0], docs[0])
    # alone or batched with other shapes: same rows (up to padding numerics)
    np.testing.assert_allclose(emb.embed(images[1]), docs[1], atol=1e-4)


@pytest.mark.parametrize("which", FAMILY)
def test_maxsim_equals_independent_computation(which: str, multivector_specs: dict[str, str],
                                               load: Callable[[str], Embedder],
                                               images: list[Image.Image]) -> None:
    spec = multivector_specs[which]
    emb = load(spec)
    ref_q, ref_d, proc = reference(spec, images)
    docs = emb.embed_batch(images, "document")
    ours = np.array([[float((q @ d.T).max(axis=1).sum()) for d in docs] for q in emb.embed_batch(QUERIES, "query")])
    expected = np.array([[float((q @ d.T).max(dim=1).values.sum()) for d in ref_d] for q in ref_q])
    assert ours.shape == (2, 3)
    np.testing.assert_allclose(ours, expected, atol=1e-3)
    # the library scorer agrees where its zero padding cannot matter (one doc: no padding);
    # with docs of different lengths it pads with zero rows, which win over negative similarities
    score = proc.score_retrieval if spec.startswith("hf:") else proc.score  # type: ignore[attr-defined]
    np.testing.assert_allclose(ours[:, :1], score(ref_q, ref_d[:1]).numpy(), atol=1e-3)


def test_pooling_real_multivectors(multivector_specs: dict[str, str], load: Callable[[str], Embedder],
                                   images: list[Image.Image]) -> None:
    emb = load(multivector_specs["colqwen2_5"])
    doc = emb.embed(images[1])
    for factor in (2, 3):
        pooled = hierarchical_pool(doc, factor)
        assert pooled.vectors.shape == (len(doc) // factor, emb.dim)
        assert pooled.labels.shape == (len(doc),) and pooled.labels.max() == len(pooled.vectors) - 1
    assert prefetch_vector(doc).shape == (emb.dim,)


def test_architecture_is_chosen_from_config(colqwen2_dir: Path, colqwen2_5_dir: Path,
                                            load: Callable[[str], Embedder]) -> None:
    assert load(f"colpali:{colqwen2_dir}").architecture == "ColQwen2"  # type: ignore[attr-defined]
    assert load(f"colpali:{colqwen2_5_dir}").architecture == "ColQwen2_5"  # type: ignore[attr-defined]
    assert choose_architecture({"model_type": "paligemma"}) == "ColPali"
    assert choose_architecture({"architectures": ["ColIdefics3"], "model_type": "idefics3"}) == "ColIdefics3"
    assert choose_architecture({"model_type": "llama"}) is None


@pytest.mark.parametrize("spec", ["hf:vidore/colqwen2-v1.0-hf", "colpali:vidore/colqwen2.5-v0.2",
                                  "colpali:vidore/colpali-v1.3", "hf:/no/such/dir", "colpali:/no/such/dir"])
def test_offline_or_missing_raise_unavailable(spec: str) -> None:
    with pytest.raises(Unavailable):
        load_embedder(spec, EmbedderOptions(device="cpu"))


def test_folder_without_weights_raises_unavailable(colqwen2_dir: Path, hf_colqwen2_dir: Path,
                                                   tmp_path: Path) -> None:
    for src, prefix in ((colqwen2_dir, "colpali"), (hf_colqwen2_dir, "hf")):
        dst = tmp_path / prefix
        dst.mkdir()
        for f in src.iterdir():
            if not f.name.endswith(".safetensors"):
                (dst / f.name).write_bytes(f.read_bytes())
        with pytest.raises(Unavailable, match="cannot load"):
            load_embedder(f"{prefix}:{dst}", EmbedderOptions(device="cpu"))
