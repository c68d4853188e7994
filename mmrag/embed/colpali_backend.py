"""ColPali-family multi-vectors with colpali-engine (``colpali:<hub id or folder>``).

colpali-engine covers the model zoo in its own format, including LoRA adapter repos such
as ``vidore/colqwen2.5-v0.2`` (adapter on ``vidore/colqwen2.5-base``): ColQwen2, ColQwen2.5,
ColQwen3, ColPali (PaliGemma), ColIdefics3, ColModernVBert. The class is chosen from the
checkpoint's ``config.json`` (``architectures``, else ``model_type``), or, for an adapter repo,
from its base model's config. It is installed with ``--no-deps`` because its metadata caps
torch below the version this project needs (see README). The transformers-native
``*ForRetrieval`` checkpoints (``-hf`` repos) load with ``hf:`` instead.
"""

from __future__ import annotations

import json
import os
from typing import Any

from mmrag.devices import resolve_device, resolve_dtype
from mmrag.embed.base import EmbedderOptions
from mmrag.embed.hf_colpali_backend import MultiVectorEmbedder
from mmrag.errors import Unavailable

# architecture (class) name -> processor class name, both in colpali_engine.models
PROCESSORS = {
    "ColQwen2": "ColQwen2Processor",
    "ColQwen2_5": "ColQwen2_5_Processor",
    "ColQwen3": "ColQwen3Processor",
    "ColPali": "ColPaliProcessor",
    "ColIdefics3": "ColIdefics3Processor",
    "ColModernVBert": "ColModernVBertProcessor",
}
# base-model model_type -> architecture, for configs that do not name a Col* class
MODEL_TYPES = {
    "qwen2_vl": "ColQwen2",
    "qwen2_5_vl": "ColQwen2_5",
    "qwen3_vl": "ColQwen3",
    "paligemma": "ColPali",
    "idefics3": "ColIdefics3",
    "modernvbert": "ColModernVBert",
}


def read_checkpoint_json(name_or_path: str, filename: str) -> dict[str, Any] | None:
    """A JSON file of a local folder or hub repo; None when it does not exist or cannot be fetched."""
    if os.path.isdir(name_or_path):
        path = os.path.join(name_or_path, filename)
        if not os.path.isfile(path):
            return None
    else:
        try:
            from huggingface_hub import hf_hub_download

            path = hf_hub_download(name_or_path, filename)
        except Exception:
            return None
    with open(path, encoding="utf-8") as f:
        data: dict[str, Any] = json.load(f)
    return data


def choose_architecture(config: dict[str, Any]) -> str | None:
    """The colpali-engine class a config names, from ``architectures`` then ``model_type``."""
    for arch in config.get("architectures") or []:
        if arch in PROCESSORS:
            return str(arch)
    return MODEL_TYPES.get(str(config.get("model_type")))


def resolve_architecture(name: str) -> str:
    """Architecture of a checkpoint or of an adapter's base model; Unavailable if unknown."""
    config = read_checkpoint_json(name, "config.json")
    if config is None:
        adapter = read_checkpoint_json(name, "adapter_config.json")
        base = (adapter or {}).get("base_model_name_or_path")
        config = read_checkpoint_json(str(base), "config.json") if base else None
    if config is None:
        raise Unavailable(f"colpali:{name}: no config.json (or adapter base config) found locally "
                          "or on the hub")
    arch = choose_architecture(config)
    if arch is None:
        raise Unavailable(f"colpali:{name}: config names {config.get('architectures')} / "
                          f"{config.get('model_type')!r}; colpali: takes {', '.join(sorted(PROCESSORS))}")
    return arch


class ColPaliEngineEmbedder(MultiVectorEmbedder):
    """colpali-engine model + processor; their forward returns ``(B, L, dim)`` directly."""

    def __init__(self, name: str, options: EmbedderOptions) -> None:
        self.spec = f"colpali:{name}"
        self.device = resolve_device(options.device)
        dtype = resolve_dtype(options.dtype, self.device)
        try:
            import colpali_engine.models as zoo

            arch = resolve_architecture(name)
            self.model = getattr(zoo, arch).from_pretrained(name, dtype=dtype).to(self.device).eval()
            self.processor = getattr(zoo, PROCESSORS[arch]).from_pretrained(name)
        except Unavailable:
            raise
        except Exception as exc:  # offline hub, missing weights, colpali-engine missing or too old, ...
            raise Unavailable(f"cannot load ColPali-family model colpali:{name}: {exc}") from exc
        self.architecture = arch
        self.dim = int(self.model.dim)
        self.max_batch = 16 if self.device.startswith("cuda") else 4

    def _forward(self, batch: Any) -> Any:
        return self.model(**batch)

    def _process_images(self, images: list[Any]) -> Any:
        return self.processor.process_images(images)

    def _process_queries(self, texts: list[str]) -> Any:
        return self.processor.process_queries(texts)

    def _image_mask(self, batch: Any) -> Any | None:
        get_mask = getattr(self.processor, "get_image_mask", None)
        return get_mask(batch) if get_mask is not None else None
