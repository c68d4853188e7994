"""The int8 text encoder: a sentence-transformers model's transformer exported to ONNX here and
quantised with ONNX Runtime's dynamic int8 (weights int8 per output channel, activations uint8 per
batch), run by an ONNX Runtime session on the CPU with the kernels :mod:`mmrag.cpu_kernels` chose
for this processor (VNNI: u8s8; x86 without VNNI: u8u8 through ``session.x64quantprecision``, since the
u8s8 kernels there sum in saturating 16 bits).

Nothing is downloaded: the export reads the weights from the local model folder, at first use, into the
user's cache folder (:func:`default_cache_root`), keyed by the hash of the folder's files
(:func:`export_key`, so finding a cached export imports neither torch nor transformers), the
torch / ONNX Runtime versions and the chosen kernels (``<cache>/onnx-int8/<key>/model.onnx``), so every
process and data folder on a machine shares one export, and a cache carried to another kind of CPU
builds its own. A later load reuses the file; a file that ONNX Runtime
cannot open (a torn write, a disk error) is rebuilt once. The export is written to a temporary folder
and moved into place, so a crash never leaves a half-written model under the key.

Measured on the 2-vCPU EPYC (docs/benchmarks.md, "Text kernels by CPU"): per-channel weights
keep the cosine to float32 at ~0.995, per-tensor weights (ONNX Runtime's default, and torch's
``quantize_dynamic``) fall to 0.93-0.95 on MiniLM, so per-channel is what this module builds; the
feed-forward output projections stay float32 (:func:`down_projections`), which keeps the 1st percentile
above 0.99.
"""

from __future__ import annotations

import hashlib
import logging
import os
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.cpu_kernels import TextKernels

log = logging.getLogger(__name__)

INPUTS = ("input_ids", "attention_mask", "token_type_ids")
"""The token inputs an export takes, those of them the model's tokenizer gives."""


def default_cache_root() -> Path:
    """``$XDG_CACHE_HOME/mmrag`` (``~/.cache/mmrag``): where a model folder's derived files go."""
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mmrag"


def export_key(model_dir: Path, kernels: str) -> str:
    """16 hex digits of the hash of the model folder's files (relative names, sizes, bytes), the export's tool
    versions and ``kernels`` (:attr:`TextKernels.label`): computed from the files alone, so a cached export is
    found without importing torch or loading the weights."""
    from importlib.metadata import version

    h = hashlib.sha256(f"torch={version('torch')} ort={version('onnxruntime')} int8-per-channel-fp32-down "
                       f"kernels={kernels}".encode())
    for file in sorted(p for p in model_dir.rglob("*") if p.is_file()):
        h.update(f"{file.relative_to(model_dir).as_posix()}:{file.stat().st_size}".encode())
        with file.open("rb") as f:
            h.update(hashlib.file_digest(f, "sha256").digest())
    return h.hexdigest()[:16]


class _Wrapped:
    """The transformer as a function of positional tensors (what torch.onnx.export traces)."""

    def __init__(self, model: Any, names: tuple[str, ...]) -> None:
        import torch

        class Forward(torch.nn.Module):
            def __init__(self) -> None:
                super().__init__()
                self.model = model

            def forward(self, *tensors: torch.Tensor) -> torch.Tensor:
                return self.model(**dict(zip(names, tensors, strict=True))).last_hidden_state  # (B, T, H)

        self.module = Forward()


def export_int8(model: Any, names: tuple[str, ...], target: Path) -> None:
    """Export ``model`` (a transformers encoder) to ONNX and quantise it to int8 at ``target``."""
    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".build-") as tmp:
        fp32, int8 = Path(tmp) / "fp32.onnx", Path(tmp) / "model.onnx"
        sample = tuple(torch.ones(2, 8, dtype=torch.long) for _ in names)
        axes = {n: {0: "batch", 1: "tokens"} for n in (*names, "hidden")}
        with torch.inference_mode():
            torch.onnx.export(_Wrapped(model, names).module, sample, str(fp32), input_names=list(names),
                              output_names=["hidden"], dynamic_axes=axes, opset_version=17, dynamo=False)
        quantize_dynamic(str(fp32), str(int8), weight_type=QuantType.QInt8, per_channel=True,
                         nodes_to_exclude=down_projections(fp32))
        os.replace(int8, target)


def down_projections(path: Path) -> list[str]:
    """The MatMuls whose constant weight narrows its input (``K x N``, ``K > N``): each feed-forward block's
    output projection, whose inputs (after GELU) carry the outliers that dynamic int8 clips. They stay
    float32 (a third of the multiply-adds); on MiniLM that lifts the cosine to float32 from p1 0.988 to 0.995
    (docs/benchmarks.md, "Text kernels by CPU"). Found by shape, not by name, so any encoder's graph works."""
    import onnx

    graph = onnx.load(str(path), load_external_data=False).graph
    shapes = {init.name: tuple(init.dims) for init in graph.initializer}
    return [node.name for node in graph.node if node.op_type == "MatMul" and len(node.input) == 2
            and len(shape := shapes.get(node.input[1], ())) == 2 and shape[0] > shape[1]]


class OnnxInt8Encoder:
    """Lifecycle: built from a model folder (reuses the cached int8 file, or calls ``build(target)``, which
    loads the weights and :func:`export_int8` s them, when there is none or it does not load);
    ``token_embeddings(feed, threads)`` runs a padded batch. One ONNX Runtime session per intra-op thread
    count, made when first asked (the embedding service chooses the count per batch: ``threads``)."""

    def __init__(self, model_dir: Path, cache_root: Path, kernels: TextKernels,
                 build: Callable[[Path], None]) -> None:
        self.kernels = kernels
        self.path = cache_root / "onnx-int8" / export_key(model_dir, kernels.label) / "model.onnx"
        self._sessions: dict[int, Any] = {}
        if not self.path.is_file():
            log.info("exporting the int8 text model to %s (first use)", self.path)
            build(self.path)
        try:
            self.session(1)
        except Exception as exc:  # onnxruntime raises its own Fail/InvalidProtobuf types
            log.warning("int8 model %s does not load (%s); rebuilding it", self.path, exc)
            self.path.unlink(missing_ok=True)
            build(self.path)
            self.session(1)
        self.names = tuple(i.name for i in self.session(1).get_inputs())

    def session(self, threads: int) -> Any:
        if threads not in self._sessions:
            import onnxruntime as ort

            opts = ort.SessionOptions()
            opts.intra_op_num_threads = threads
            opts.inter_op_num_threads = 1
            opts.add_session_config_entry("session.intra_op.allow_spinning", "0")  # no spin against the event loop
            for key, value in self.kernels.session_config:  # u8u8 on a CPU whose u8s8 saturate
                opts.add_session_config_entry(key, value)
            opts.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
            self._sessions[threads] = ort.InferenceSession(str(self.path), opts,
                                                           providers=["CPUExecutionProvider"])
        return self._sessions[threads]

    def token_embeddings(self, features: Mapping[str, np.ndarray], threads: int) -> np.ndarray:
        """``(B, T, hidden)`` float32 from the padded ``(B, T)`` token arrays of ``features``."""
        feed = {n: np.ascontiguousarray(features[n], dtype=np.int64) for n in self.names}
        out: np.ndarray = self.session(threads).run(None, feed)[0]
        return out
