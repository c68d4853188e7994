"""The answer service of a process, built once, with its extractive fallback.

Lifecycle: :func:`mmrag.pipeline.build_pipeline` builds one :class:`Answers`; nothing loads then.
``enable()`` builds the :class:`~mmrag.generate.answer_service.AnswerService` on first call (loading the VLM:
the API does so at start-up, the CLI when it answers) and returns the same service afterwards. When
the configured VLM cannot be loaded the service still answers, extractively, and
``unavailable['vlm']`` says why. ``close`` stops the VLM engine, if one was built.
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

from mmrag.embed.lazy import LOAD_ERRORS, one_line
from mmrag.errors import MMRAGError
from mmrag.hub import go_offline_if_unreachable
from mmrag.vlm_config import VLMConfig

if TYPE_CHECKING:
    from mmrag.generate.answer_service import AnswerService, LoadPageImage, SearchFn
    from mmrag.generate.engine import VLMEngine

log = logging.getLogger(__name__)


class Answers:
    """Owns the answer service: retrieval + VLM (or extractive) answers over the process's corpora."""

    def __init__(self, search: SearchFn, load_page_image: LoadPageImage, vlm: VLMConfig,
                 unavailable: dict[str, str], max_query_chars: int = 2000) -> None:
        self.search = search
        self.max_query_chars = max_query_chars  # the retriever's bound on a query (a conversation's stays under it)
        self.load_page_image = load_page_image  # (corpus, page id) -> PNG bytes
        self.vlm = vlm
        self.unavailable = unavailable  # shared with the pipeline: "vlm" -> why answers are extractive
        self.service: AnswerService | None = None  # None until enable()
        self._lock = threading.Lock()

    @property
    def engine(self) -> VLMEngine | None:
        """The VLM engine of the built service (None before ``enable`` or without a VLM)."""
        return self.service.engine if self.service is not None else None

    def enable(self) -> AnswerService:
        """Build the answer service once (loads the VLM) and return it."""
        with self._lock:
            if self.service is None:
                self.service = self._build()
                if self.vlm.backend == "none":
                    self.unavailable.setdefault("vlm", "disabled in configuration (vlm.backend = none)")
            return self.service

    def _build(self) -> AnswerService:
        from mmrag.generate.answer_service import AnswerService

        vlm = self.vlm
        if vlm.backend == "transformers":
            go_offline_if_unreachable()
        try:
            return AnswerService.from_config(self.search, self.load_page_image, vlm, self.max_query_chars)
        except LOAD_ERRORS as exc:
            reason = exc.message if isinstance(exc, MMRAGError) else str(exc)
            self.unavailable["vlm"] = f"{vlm.model}: {reason}"
            log.warning("VLM %s is not available, answers will be extractive: %s", vlm.model, one_line(reason))
            return AnswerService(self.search, self.load_page_image, None,
                                 default_visual_token_budget=vlm.visual_token_budget,
                                 max_tokens_per_image=vlm.max_visual_tokens_per_image,
                                 default_max_new_tokens=vlm.max_new_tokens,
                                 extractive_reason=f"The VLM {vlm.model} could not be loaded ({one_line(reason)})",
                                 max_query_chars=self.max_query_chars)

    def close(self) -> None:
        if self.engine is not None:
            self.engine.close()
