"""Configuration of the VLM engine: defined in :mod:`mmrag.vlm_config` (importable without the
engine package), re-exported here for the engine's modules."""

from mmrag.vlm_config import VLMConfig

__all__ = ["VLMConfig"]
