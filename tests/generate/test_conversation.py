"""A question inside a conversation: the retrieval query, the prompt the generator reads, stop sequences,
usage; through the answer service (the one answer path the REST, OpenAI and MCP doors share)."""

from __future__ import annotations

import pytest

from mmrag.errors import InvalidInput
from mmrag.generate.answer_service import AnswerDone, AnswerService, TokenDelta
from mmrag.generate.base import GenerationRequest, RequestTimings
from mmrag.generate.conversation import Conversation, StopScanner, Turn, cut_at_stop, retrieval_query
from mmrag.generate.engine import VLMEngine
from mmrag.generate.transformers_backend import TransformersBackend
from mmrag.types import SearchRequest, SearchResult
from mmrag.vlm_config import VLMConfig
from tests.generate.test_answer_service import fake_search, load_page

EARLIER = [Turn("user", "What was the revenue of Acme in 2020?"), Turn("assistant", "42 million [1]."),
           Turn("user", "   ")]


def test_the_retrieval_query_is_the_question_after_earlier_user_turns() -> None:
    assert retrieval_query("And in 2021?", EARLIER, 2000) == "What was the revenue of Acme in 2020?\nAnd in 2021?"
    assert retrieval_query("And in 2021?", EARLIER, 20) == "And in 2021?"  # no room: the question alone
    assert retrieval_query("a" * 40 + "q" * 10, EARLIER, 10) == "q" * 10  # a long question: its end
    many = [Turn("user", f"question {i}") for i in range(10)]
    assert retrieval_query("now?", many, 2000).splitlines() == ["question 7", "question 8", "question 9", "now?"]


@pytest.mark.parametrize("deltas", [["Paris is [1]. STOP here"], ["Paris is [1]. S", "TO", "P here"],
                                    list("Paris is [1]. STOP here")])
def test_stop_sequences_cut_a_stream_wherever_the_deltas_split(deltas: list[str]) -> None:
    scanner = StopScanner(["STOP", "\n\n"])
    out = "".join(scanner.feed(d) for d in deltas) + scanner.flush()
    assert out == "Paris is [1]. " and scanner.stopped


def test_text_that_only_looks_like_a_stop_start_is_released() -> None:
    scanner = StopScanner(["STOP"])
    assert scanner.feed("a ST") == "a " and scanner.feed("ART") == "START" and not scanner.stopped
    assert scanner.feed("x S") == "x " and scanner.flush() == "S"
    assert cut_at_stop("no stop here", []) == ("no stop here", False)


class Recording:
    def __init__(self) -> None:
        self.requests: list[SearchRequest] = []

    def __call__(self, corpus: str, request: SearchRequest) -> SearchResult:
        self.requests.append(request)
        return fake_search(corpus, SearchRequest(query="x", top_k=request.top_k))


def test_extractive_answers_use_the_conversation_and_count_words() -> None:
    search = Recording()
    service = AnswerService(search, load_page, None)
    talk = Conversation(earlier=EARLIER, spaces=["bm25"], stop=["about"])
    events = list(service.answer_stream("c1", "And in 2021?", top_k=2, conversation=talk))
    done = events[-1]
    assert isinstance(done, AnswerDone) and done.mode == "extractive"
    assert search.requests[0].query.endswith("Acme in 2020?\nAnd in 2021?") and search.requests[0].spaces == ["bm25"]
    assert done.answer == "[1] snippet 0 " and done.usage.unit == "words"  # cut before the stop sequence
    assert (done.usage.prompt_tokens, done.usage.completion_tokens) == (8 + 3, 3)


def test_an_image_alone_is_a_question() -> None:
    search = Recording()
    service = AnswerService(search, load_page, None)
    list(service.answer_stream("c1", " ", conversation=Conversation(image=b"png")))
    assert search.requests[0].image == b"png" and search.requests[0].query == ""
    with pytest.raises(InvalidInput, match="question is empty"):
        service.answer_stream("c1", " ", conversation=Conversation())


def test_the_generator_reads_the_conversation_and_reports_its_tokens(backend: TransformersBackend,
                                                                     vlm_config: VLMConfig) -> None:
    engine = VLMEngine(backend, vlm_config)
    seen: list[GenerationRequest] = []
    start = engine.start

    def recording_start(request: GenerationRequest, timings: RequestTimings | None = None):  # type: ignore[no-untyped-def]
        seen.append(request)
        return start(request, timings)

    engine.start = recording_start  # type: ignore[method-assign]
    service = AnswerService(fake_search, load_page, engine, max_tokens_per_image=64)
    talk = Conversation(earlier=EARLIER, instructions="Answer in French.")
    events = list(service.answer_stream("c1", "And in 2021?", top_k=2, visual_token_budget=64, max_new_tokens=3,
                                        conversation=talk))
    done = events[-1]
    assert isinstance(done, AnswerDone) and done.mode == "vlm"
    prompt = seen[0].prompt
    assert "User: What was the revenue of Acme in 2020?" in prompt and "Assistant: 42 million [1]." in prompt
    assert prompt.rstrip().endswith("Question: And in 2021?") and seen[0].system.endswith("Answer in French.")
    assert done.usage.unit == "tokens" and done.usage.prompt_tokens == done.timings["prompt_tokens"] > 64
    assert done.usage.completion_tokens == done.timings["new_tokens"] == 3 and done.finish_reason == "length"
    assert done.answer == "".join(e.text for e in events if isinstance(e, TokenDelta))
    engine.close(close_backend=False)
