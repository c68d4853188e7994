"""The text model's precision (``embed.text_precision``) with the real shipped MiniLM: each arm's
vectors against sentence-transformers' own float32 ``encode``, the int8 export's cache, validation."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from pydantic import ValidationError

from mmrag.config import EmbedConfig, Settings
from mmrag.cpu_kernels import choose_text_kernels, this_cpu
from mmrag.embed.base import EmbedderOptions, load_embedder
from mmrag.embed.sentence import SentenceEmbedder, resolve_sentence_model
from mmrag.errors import InvalidInput
from mmrag.pipeline import build_embedders

SPEC = "st:sentence-transformers/all-MiniLM-L6-v2"
TEXTS = ["Revenue grew 12% year over year to $4.2 billion, led by cloud services.",
         "What was the net income in the third quarter?",
         "Kurz.",
         "The consolidated balance sheet shows total assets of 1,234 million at the end of the year. " * 12]
# measured on the shipped MiniLM (docs/benchmarks.md, "Text kernels by CPU"): bf16 >= 0.99998,
# int8 (ONNX Runtime, per-channel weights, exact kernels) 0.993-0.996; per-tensor weights fall to ~0.93,
# u8s8 kernels on a CPU without VNNI (16-bit saturation) to 0.989 on these texts (the owners' AVX2 EPYC)
FLOOR = {"float32": 0.99999, "bf16": 0.9999, "int8": 0.99}


@pytest.fixture(scope="module")
def reference() -> np.ndarray:
    from sentence_transformers import SentenceTransformer

    model = SentenceTransformer(resolve_sentence_model(SPEC[3:]), device="cpu")
    return np.asarray(model.encode(TEXTS, normalize_embeddings=True))


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("model-cache")


def _load(precision: str, cache: Path, kernels: str = "auto") -> SentenceEmbedder:
    model = load_embedder(SPEC, EmbedderOptions(device="cpu", text_precision=precision, cache_dir=str(cache),
                                                int8_kernels=kernels))
    assert isinstance(model, SentenceEmbedder)
    return model


def _exact_int8_kernels_here() -> list[str]:
    """The int8 kernels that are exact on this CPU: u8u8 on every x86 CPU, u8s8 where it has VNNI."""
    cpu = this_cpu()
    if not cpu.x86:
        return ["auto"]
    return ["u8s8", "u8u8"] if cpu.vnni else ["u8u8"]


def _check_close(model: SentenceEmbedder, reference: np.ndarray, floor: float) -> None:
    for kind in ("document", "query"):
        vectors = np.stack(model.embed_batch(TEXTS, kind))
        cosines = (vectors * reference).sum(axis=1)
        assert cosines.min() >= floor, (model.kernels, this_cpu().kind, cosines)
        assert np.allclose(np.linalg.norm(vectors, axis=1), 1, atol=1e-5)
    if model.precision != "float32":  # not float32 itself: the arm changes the numbers
        assert (np.stack(model.embed_batch(TEXTS)) * reference).sum(axis=1).min() < 0.999999


@pytest.mark.parametrize("precision", ["float32", "bf16", "int8", "auto"])
def test_each_precision_close_to_float32_encode(precision: str, reference: np.ndarray, cache: Path) -> None:
    """Each setting as this CPU runs it (int8, auto: the kernels chosen here) keeps its floor; bf16 on a CPU
    without native bfloat16 is refused, saying why and what to use."""
    if precision == "bf16" and not this_cpu().native_bf16:
        with pytest.raises(InvalidInput, match=r"needs a CPU that multiplies bfloat16 natively.*Use 'auto'"):
            _load(precision, cache)
        return
    model = _load(precision, cache)
    assert model.text_kernels == choose_text_kernels(precision, this_cpu())
    _check_close(model, reference, FLOOR[model.precision])


@pytest.mark.parametrize("kernels", _exact_int8_kernels_here())
def test_every_exact_int8_kernel_here_keeps_the_floor(kernels: str, reference: np.ndarray, cache: Path) -> None:
    """u8u8 (what a CPU without VNNI gets) runs on every x86 CPU, so a VNNI machine checks it too; there its
    vectors equal VNNI's exact u8s8 ones to float rounding (the same integer products)."""
    model = _load("int8", cache, kernels)
    _check_close(model, reference, FLOOR["int8"])
    options = model.int8.session(1).get_session_options()  # type: ignore[union-attr]
    try:
        entry = options.get_session_config_entry("session.x64quantprecision")
    except RuntimeError:  # onnxruntime: no such entry
        entry = None
    assert (entry == "1") == (model.kernels == "int8/u8u8"), (model.kernels, entry)
    if kernels == "u8u8" and this_cpu().vnni:
        exact = np.stack(_load("int8", cache, "u8s8").embed_batch(TEXTS))
        np.testing.assert_allclose(np.stack(model.embed_batch(TEXTS)), exact, atol=1e-4)


def test_int8_export_is_cached_and_a_corrupt_file_rebuilt(cache: Path) -> None:
    first = _load("int8", cache)
    path = first.int8.path  # type: ignore[union-attr]
    assert path.is_file() and path.is_relative_to(cache)
    built = path.stat().st_mtime_ns
    again = _load("int8", cache)
    assert again.int8.path == path and path.stat().st_mtime_ns == built  # type: ignore[union-attr]
    expected = np.stack(first.embed_batch(TEXTS))
    path.write_bytes(b"not an onnx model")
    rebuilt = _load("int8", cache)
    assert path.stat().st_size > 1_000_000 and path.read_bytes()[:17] != b"not an onnx model"
    assert np.allclose(np.stack(rebuilt.embed_batch(TEXTS)), expected, atol=1e-5)
    assert not [p.name for p in path.parent.parent.iterdir() if p.name.startswith(".")]  # no build folder left
    if this_cpu().x86:  # keyed by the kernels: a CPU that chooses others builds its own
        other = "u8u8" if first.kernels == "int8/u8s8" else "u8s8"
        assert _load("int8", cache, other).int8.path.parent != path.parent  # type: ignore[union-attr]


def test_int8_vectors_equal_the_sentence_transformers_modules_on_the_same_session(cache: Path) -> None:
    """The int8 path tokenises with the model's tokenizer.json and pools in numpy (no torch at query time); its
    vectors equal sentence-transformers' own tokenisation, pooling and normalisation around the same ONNX
    Runtime session (what the path computed before) to 1e-6."""
    import torch

    model = _load("int8", cache)
    st = model.model  # the sentence-transformers model, loaded now for the reference only
    for kind in ("document", "query"):
        features = st.preprocess(TEXTS)
        feed = {k: v.numpy() for k, v in features.items() if isinstance(v, torch.Tensor)}
        hidden = model.int8.token_embeddings(feed, 1)  # type: ignore[union-attr]
        pooled = {**features, "token_embeddings": torch.from_numpy(hidden)}
        for module in list(st)[1:]:
            pooled = module(pooled)
        expected = torch.nn.functional.normalize(pooled["sentence_embedding"].float(), p=2, dim=1).numpy()
        np.testing.assert_allclose(np.stack(model.embed_batch(TEXTS, kind)), expected, atol=1e-6)


def test_bad_precision_names_the_allowed_values(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="'auto', 'float32', 'int8' or 'bf16'"):
        EmbedConfig(text_precision="fp16")  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="'fp16' is not one of: auto, float32, int8, bf16"):
        load_embedder(SPEC, EmbedderOptions(text_precision="fp16"))
    with pytest.raises(InvalidInput, match="'u4' are not one of: auto, u8s8, u8u8"):
        load_embedder(SPEC, EmbedderOptions(text_precision="int8", int8_kernels="u4"))


def test_setting_reaches_the_text_model(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, embed=EmbedConfig(text_precision="float32", clip_model=None,
                                                             colpali_model=None))
    embedders, _ = build_embedders(settings)
    text = embedders["text"].load()  # type: ignore[attr-defined]
    assert isinstance(text, SentenceEmbedder) and text.precision == "float32" and text.int8 is None
    assert text.kernels == "float32/torch-cpu"


def test_the_embedding_service_serves_the_int8_arm_and_says_so(cache: Path, serve) -> None:  # type: ignore[no-untyped-def]
    from api.embed_server import create_embed_app
    from mmrag.embed.service_client import RemoteEmbedder

    app = create_embed_app([SPEC], EmbedderOptions(device="cpu", text_precision="int8", cache_dir=str(cache)))
    server = serve(app)
    remote, local = RemoteEmbedder(server.url, SPEC), _load("int8", cache)
    assert remote.precision == local.precision == "int8"  # read from the service's /health
    assert remote.kernels == local.kernels == choose_text_kernels("int8", this_cpu()).label
    for kind in ("document", "query"):
        np.testing.assert_allclose(np.stack(remote.embed_batch(TEXTS, kind)), np.stack(local.embed_batch(TEXTS, kind)),
                                   atol=1e-5)
    remote.close()
