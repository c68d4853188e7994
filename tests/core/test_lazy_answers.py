"""The answer service's owner: built once on first need, extractive (with the reason) when the VLM is off."""

from __future__ import annotations

import threading
from pathlib import Path

from mmrag.generate.answer_events import final_event
from mmrag.lazy_answers import Answers
from mmrag.types import Evidence, EvidenceKind, SearchRequest, SearchResult
from mmrag.vlm_config import VLMConfig


def _search(corpus: str, request: SearchRequest) -> SearchResult:
    ev = Evidence(EvidenceKind.PAGE, corpus, "d1", "a.pdf", "p1", 2, 0.9, snippet="The typewriter was patented in 1868")
    return SearchResult([ev], {"total": 0.001})


def _no_image(corpus: str, page_id: str) -> bytes:
    raise AssertionError("an extractive answer reads no page image")


def test_nothing_loads_until_enabled_then_one_service_for_every_caller() -> None:
    unavailable: dict[str, str] = {}
    answers = Answers(_search, _no_image, VLMConfig(backend="none"), unavailable)
    assert answers.service is None and answers.engine is None and unavailable == {}
    built = []
    threads = [threading.Thread(target=lambda: built.append(answers.enable())) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 4 and all(s is answers.service for s in built) and answers.engine is None
    assert unavailable == {"vlm": "disabled in configuration (vlm.backend = none)"}
    done = final_event(answers.enable().answer_stream("c", "When was the typewriter patented?", 3))
    assert done.mode == "extractive" and "1868" in done.answer
    assert [(c.filename, c.page) for c in done.citations] == [("a.pdf", 2)]
    assert "vlm.backend = none" in done.notice
    answers.close()


def test_a_vlm_that_cannot_load_falls_back_to_extractive_answers_saying_why(tmp_path: Path) -> None:
    unavailable: dict[str, str] = {}
    missing = tmp_path / "no-such-vlm"
    answers = Answers(_search, _no_image, VLMConfig(backend="transformers", model=str(missing)), unavailable)
    done = final_event(answers.enable().answer_stream("c", "When was the typewriter patented?", 3))
    assert answers.engine is None and done.mode == "extractive" and "1868" in done.answer
    assert unavailable["vlm"].startswith(f"{missing}: ")
    assert f"The VLM {missing} could not be loaded" in done.notice
    assert "vlm.backend = none" not in done.notice
