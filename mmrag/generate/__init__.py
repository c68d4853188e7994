"""The VLM engine: visual-token accounting, encoder cache, token-aware admission, backends, answers.

Build with :func:`build_engine` (None when ``backend == "none"``) and wrap in
:class:`~mmrag.generate.answer_service.AnswerService`. Imports of torch/transformers happen only when a
transformers backend is built.
"""

from __future__ import annotations

from mmrag.generate.admission import AdmissionController
from mmrag.generate.answer_service import (
    AnswerDone,
    AnswerError,
    AnswerEvent,
    AnswerService,
    Citation,
    EvidenceSelected,
    TokenDelta,
    event_payload,
    event_payloads,
    final_answer,
)
from mmrag.generate.base import EncodedImage, GenerationRequest, ImageInput, RequestTimings, VLMBackend
from mmrag.generate.encoder_cache import EncoderCache, EncoderCacheKey
from mmrag.generate.engine import VLMEngine
from mmrag.generate.factory import build_backend, build_engine
from mmrag.generate.visual_tokens import VisualTokenPlan, tokenizer_for
from mmrag.vlm_config import VLMConfig

__all__ = [
    "AdmissionController",
    "AnswerDone",
    "AnswerError",
    "AnswerEvent",
    "AnswerService",
    "Citation",
    "EncodedImage",
    "EncoderCache",
    "EncoderCacheKey",
    "EvidenceSelected",
    "GenerationRequest",
    "ImageInput",
    "RequestTimings",
    "TokenDelta",
    "VLMBackend",
    "VLMConfig",
    "VLMEngine",
    "VisualTokenPlan",
    "build_backend",
    "build_engine",
    "event_payload",
    "event_payloads",
    "final_answer",
    "tokenizer_for",
]
