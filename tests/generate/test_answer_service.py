"""AnswerService: evidence under the visual-token budget, streamed events, citations, SSE."""

from __future__ import annotations

import pytest

from mmrag.errors import InvalidInput, Overloaded
from mmrag.generate.answer_events import AnswerDone, AnswerError, EvidenceSelected, TokenDelta
from mmrag.generate.answer_service import AnswerService, cited_numbers
from mmrag.generate.base import GenerationRequest
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.types import Evidence, EvidenceKind, SearchRequest, SearchResult
from mmrag.vlm_config import VLMConfig
from tests.generate.conftest import png_bytes

PAGES = {f"p{i}": png_bytes(1654 // 4, 2339 // 4, seed=i) for i in range(6)}


def fake_search(corpus: str, request: SearchRequest) -> SearchResult:
    assert corpus == "c1" and request.query
    ev = [
        Evidence(
            EvidenceKind.PAGE,
            corpus,
            f"d{i // 2}",
            f"doc{i // 2}.pdf",
            f"p{i}",
            i % 2 + 1,
            1.0 - i / 10,
            snippet=f"snippet {i} about revenue",
        )
        for i in range(request.top_k)
    ]
    ev.insert(1, Evidence(EvidenceKind.TEXT, corpus, "d0", "doc0.pdf", "p0", 1, 0.95, snippet="dup of p0"))
    return SearchResult(ev, {"total": 0.01})


def load_page(corpus: str, page_id: str) -> bytes:
    return PAGES[page_id]


def test_vlm_answer_stream(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    service = AnswerService(fake_search, load_page, VLMEngine(backend, vlm_config), max_tokens_per_image=64)
    events = list(
        service.answer_stream("c1", "What is the revenue?", top_k=5, visual_token_budget=128, max_new_tokens=5)
    )
    selected, done = events[0], events[-1]
    assert isinstance(selected, EvidenceSelected) and isinstance(done, AnswerDone)
    assert [c.page_id for c in selected.pages] == ["p0", "p1"]  # 128 tokens / 64 minimum -> 2 pages
    assert selected.visual_tokens <= 128 and selected.dropped == 3
    assert all(isinstance(e, TokenDelta) for e in events[1:-1])
    assert done.mode == "vlm" and done.answer == "".join(e.text for e in events[1:-1])
    assert {c.page_id for c in done.citations} <= {"p0", "p1"} and done.citations
    for key in ("search_s", "queue_s", "encoder_s", "prefill_s", "ttft_s", "decode_tokens_per_s"):
        assert key in done.timings
    assert service.engine is not None and service.engine.admission.used_tokens == 0


def test_overloaded_is_raised_before_streaming(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    engine = VLMEngine(backend, vlm_config.model_copy(update={"token_budget": 300, "max_queue_requests": 0}))
    service = AnswerService(fake_search, load_page, engine, max_tokens_per_image=64)
    held = engine.start(GenerationRequest("hold", "Describe the image.", max_new_tokens=250))
    with pytest.raises(Overloaded) as err:
        service.answer_stream("c1", "What is the revenue?", top_k=2, visual_token_budget=64, max_new_tokens=4)
    assert err.value.retry_after >= 1
    held.close()


def test_admission_timeout_becomes_an_error_event(backend: TransformersBackend, vlm_config: VLMConfig) -> None:
    engine = VLMEngine(backend, vlm_config.model_copy(update={"token_budget": 300, "queue_timeout_s": 0.2}))
    service = AnswerService(fake_search, load_page, engine)
    held = engine.start(GenerationRequest("hold", "Describe the image.", max_new_tokens=250))
    events = list(service.answer_stream("c1", "What?", top_k=1, visual_token_budget=0, max_new_tokens=8))
    assert isinstance(events[-1], AnswerError) and events[-1].code == "overloaded"
    held.close()
    assert engine.admission.used_tokens == 0 and engine.admission.queued == 0


def test_extractive_mode_without_a_vlm() -> None:
    service = AnswerService(fake_search, load_page, None)
    events = list(service.answer_stream("c1", "What is the revenue?", top_k=4))
    done = events[-1]
    assert isinstance(done, AnswerDone) and done.mode == "extractive"
    assert "No vision-language model is configured" in done.notice
    assert done.answer.startswith("[1] snippet 0 about revenue")
    assert [c.n for c in done.citations] == [1, 2, 3]


def test_bad_input() -> None:
    service = AnswerService(fake_search, load_page, None)
    with pytest.raises(InvalidInput, match="question is empty"):
        service.answer_stream("c1", "  ")
    with pytest.raises(InvalidInput, match="top_k"):
        service.answer_stream("c1", "q", top_k=0)


def test_citation_markers() -> None:
    assert cited_numbers("see [2] and [1, 3], not [9]", 3) == [2, 1, 3]


def test_from_config_builds_the_configured_engine(vlm_config: VLMConfig) -> None:
    assert AnswerService.from_config(fake_search, load_page, VLMConfig(backend="none")).engine is None
    service = AnswerService.from_config(fake_search, load_page, vlm_config)
    assert service.engine is not None and service.default_visual_token_budget == 128
    service.engine.close()
