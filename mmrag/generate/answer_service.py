"""Answers: retrieval -> evidence under a visual-token budget -> VLM stream with citations.

Lifecycle: ``AnswerService(search, load_page_image, engine)`` is built once by the composition
root (``engine`` is None when ``vlm.backend == "none"``). ``answer_stream(...)`` runs retrieval,
selects evidence and submits to admission *eagerly* (so NotFound / InvalidInput / Overloaded
raise before any byte is streamed and the shell can map them to 404/422/429), then returns an
iterator of typed events:

1. :class:`EvidenceSelected` — the pages that go to the model and their visual-token cost;
2. :class:`TokenDelta` — answer text as it is generated (zero or more);
3. :class:`AnswerDone` — full text, ``mode`` ("vlm" | "extractive"), citations, timings;
   or :class:`AnswerError` if the VLM fails after streaming began (e.g. admission timed out).

The events and their one JSON form are :mod:`mmrag.generate.answer_events`.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from typing import Literal

from mmrag.errors import InvalidInput, MMRAGError, Overloaded
from mmrag.generate.answer_events import AnswerDone, AnswerError, AnswerEvent, Citation, EvidenceSelected, TokenDelta
from mmrag.generate.base import GenerationRequest, ImageInput, RequestTimings, image_input
from mmrag.generate.conversation import (
    IMAGE_QUESTION,
    Conversation,
    StopScanner,
    Usage,
    conversation_lines,
    cut_at_stop,
    retrieval_query,
    word_count,
)
from mmrag.generate.engine import VLMEngine
from mmrag.generate.factory import build_engine
from mmrag.generate.visual_tokens import split_budget
from mmrag.types import Evidence, SearchRequest, SearchResult
from mmrag.vlm_config import VLMConfig

SearchFn = Callable[[str, SearchRequest], SearchResult]
LoadPageImage = Callable[[str, str], bytes]

SYSTEM_PROMPT = (
    "You answer questions about documents from the page images given. Cite the pages you "
    "used as [n] with their numbers. If the pages do not contain the answer, say so."
)
MIN_TOKENS_PER_PAGE = 64  # below this a rendered page is unreadable; fewer pages are sent instead


def cited_numbers(answer: str, n_pages: int) -> list[int]:
    """Page numbers the answer marks as ``[n]`` (also ``[1, 3]``), in first-mention order."""
    seen: list[int] = []
    for group in re.findall(r"\[(\d+(?:\s*,\s*\d+)*)\]", answer):
        for num in (int(x) for x in group.split(",")):
            if 1 <= num <= n_pages and num not in seen:
                seen.append(num)
    return seen


def unique_pages(evidence: list[Evidence]) -> list[Evidence]:
    """Best-ranked evidence item per page (search returns pages and snippets of pages)."""
    out: dict[str, Evidence] = {}
    for ev in evidence:
        out.setdefault(ev.page_id, ev)
    return list(out.values())


def build_prompt(question: str, pages: list[Citation], evidence: list[Evidence],
                 conversation: Conversation | None = None) -> str:
    """The user text: numbered page list, top text snippets, the conversation so far, the question."""
    lines = ["Pages (images above, in this order):"]
    lines += [f"[{c.n}] {c.filename}, page {c.page}" for c in pages]
    snippets = [ev.snippet.strip() for ev in evidence if ev.snippet.strip()][:3]
    if snippets:
        lines.append("Text found on the pages:")
        lines += [f"- {s[:400]}" for s in snippets]
    lines += conversation_lines(conversation.earlier if conversation is not None else ())
    lines.append(f"Question: {question}")
    return "\n".join(lines)


def extractive_answer(evidence: list[Evidence], max_snippets: int = 3) -> tuple[str, list[Citation]]:
    """Top snippets quoted with their page numbers (the answer when no VLM is configured)."""
    cites: list[Citation] = []
    parts: list[str] = []
    for ev in evidence:
        if not ev.snippet.strip() or len(cites) >= max_snippets:
            continue
        c = Citation(len(cites) + 1, ev.document_id, ev.filename, ev.page, ev.page_id)
        cites.append(c)
        parts.append(f"[{c.n}] {ev.snippet.strip()}")
    if not parts:
        return "No text evidence was found for this question.", []
    return "\n".join(parts), cites


class AnswerService:
    """See the module docstring."""

    def __init__(
        self,
        search: SearchFn,
        load_page_image: LoadPageImage,
        engine: VLMEngine | None,
        *,
        default_visual_token_budget: int = 1280,
        max_tokens_per_image: int = 1280,
        default_max_new_tokens: int = 512,
        extractive_reason: str = "No vision-language model is configured (vlm.backend = none)",
        max_query_chars: int = 2000,
    ) -> None:
        self.search = search
        self.max_query_chars = max_query_chars  # the retriever's bound: a conversation's query stays under it
        self.extractive_reason = extractive_reason  # why answers are extractive when there is no engine
        self.load_page_image = load_page_image
        self.engine = engine
        self.default_visual_token_budget = default_visual_token_budget
        self.max_tokens_per_image = max_tokens_per_image
        self.default_max_new_tokens = default_max_new_tokens

    @classmethod
    def from_config(cls, search: SearchFn, load_page_image: LoadPageImage, config: VLMConfig,
                    max_query_chars: int = 2000) -> AnswerService:
        """Build the engine ``config`` names (None for backend "none") and the service on top."""

        return cls(
            search,
            load_page_image,
            build_engine(config),
            default_visual_token_budget=config.visual_token_budget,
            max_tokens_per_image=config.max_visual_tokens_per_image,
            default_max_new_tokens=config.max_new_tokens,
            max_query_chars=max_query_chars,
        )

    def answer_stream(
        self,
        corpus: str,
        question: str,
        top_k: int = 5,
        visual_token_budget: int | None = None,
        max_new_tokens: int | None = None,
        *,
        document_ids: list[str] | None = None,
        temperature: float = 0.0,
        conversation: Conversation | None = None,
    ) -> Iterator[AnswerEvent]:
        """Search, select, submit (errors raise here), then return the event iterator. ``conversation``:
        earlier turns (in the retrieval query and the prompt), the client's instructions, a query image,
        the spaces to search, stop sequences."""
        talk = conversation or Conversation()
        if not question.strip() and talk.image is None:
            raise InvalidInput("question is empty; allowed: a non-empty question (or a query image)")
        if top_k < 1:
            raise InvalidInput(f"top_k must be >= 1, got {top_k}")
        budget = self.default_visual_token_budget if visual_token_budget is None else visual_token_budget
        if budget < 0:
            raise InvalidInput(f"visual_token_budget must be >= 0, got {budget}")
        t0 = time.perf_counter()
        query = retrieval_query(question, talk.earlier, self.max_query_chars)
        result = self.search(corpus, SearchRequest(query=query, image=talk.image, top_k=top_k,
                                                   document_ids=document_ids, spaces=talk.spaces))
        question = question.strip() or IMAGE_QUESTION
        timings = {f"search_{k}": v for k, v in result.timings.items()}
        timings["search_s"] = time.perf_counter() - t0
        evidence = result.evidence
        if self.engine is None:
            return self._extractive(evidence, timings, query, talk.stop)
        new_tokens = min(max_new_tokens or self.default_max_new_tokens, self.engine.config.max_new_tokens)
        t1 = time.perf_counter()
        pages, images, dropped = self._select(corpus, unique_pages(evidence), budget)
        timings["select_s"] = time.perf_counter() - t1
        request = GenerationRequest(
            uuid.uuid4().hex,
            build_prompt(question, pages, evidence, talk),
            images,
            SYSTEM_PROMPT + (f"\n\n{talk.instructions.strip()}" if talk.instructions.strip() else ""),
            new_tokens,
            temperature,
        )
        rt = RequestTimings()
        deltas = self.engine.start(request, rt)  # may raise Overloaded / InvalidInput now
        selected = EvidenceSelected("evidence", pages, sum(c.visual_tokens for c in pages), dropped)
        return self._vlm_events(selected, deltas, rt, timings, t0, StopScanner(talk.stop), new_tokens)

    def _select(self, corpus: str, pages: list[Evidence], budget: int) -> tuple[list[Citation], list[ImageInput], int]:
        """Keep the best-ranked pages that fit ``budget``, each resized to an equal share."""
        assert self.engine is not None
        accounting = self.engine.backend.accounting
        floor = max(MIN_TOKENS_PER_PAGE, accounting.min_tokens)
        kept, per_page = split_budget(len(pages), budget, self.max_tokens_per_image, floor)
        cites: list[Citation] = []
        images: list[ImageInput] = []
        for ev in pages[:kept]:
            label = f"{ev.filename} p.{ev.page}"
            image = image_input(self.load_page_image(corpus, ev.page_id), accounting, per_page, label)
            images.append(image)
            cites.append(Citation(len(cites) + 1, ev.document_id, ev.filename, ev.page, ev.page_id, image.plan.tokens))
        return cites, images, len(pages) - kept

    def _vlm_events(
        self,
        selected: EvidenceSelected,
        deltas: Iterator[str],
        rt: RequestTimings,
        timings: dict[str, float],
        t0: float,
        stops: StopScanner,
        new_tokens: int,
    ) -> Iterator[AnswerEvent]:
        yield selected
        parts: list[str] = []
        try:
            for delta in deltas:
                text = stops.feed(delta)
                if text:
                    parts.append(text)
                    yield TokenDelta("token", text)
                if stops.stopped:
                    break
            if rest := stops.flush():
                parts.append(rest)
                yield TokenDelta("token", rest)
        except MMRAGError as exc:
            retry = exc.retry_after if isinstance(exc, Overloaded) else None
            yield AnswerError("error", exc.code, exc.message, retry)
            return
        finally:
            close = getattr(deltas, "close", None)
            if close is not None:
                close()
        answer = "".join(parts)
        marked = cited_numbers(answer, len(selected.pages))
        cites = [selected.pages[n - 1] for n in marked] if marked else list(selected.pages)
        timings.update(rt.as_dict())
        timings["answer_total_s"] = time.perf_counter() - t0
        usage = Usage(rt.prompt_tokens, rt.new_tokens)
        finish: Literal["stop", "length"] = "length" if not stops.stopped and rt.new_tokens >= new_tokens else "stop"
        yield AnswerDone("done", answer, "vlm", cites, timings, usage=usage, finish_reason=finish)

    def _extractive(self, evidence: list[Evidence], timings: dict[str, float], query: str,
                    stop: Sequence[str]) -> Iterator[AnswerEvent]:
        answer, cites = extractive_answer(evidence)
        answer = cut_at_stop(answer, stop)[0]
        yield EvidenceSelected("evidence", cites, 0, max(0, len(unique_pages(evidence)) - len(cites)))
        yield TokenDelta("token", answer)
        notice = (f"{self.extractive_reason}: this is an extractive answer quoting the top evidence "
                  "snippets, not a generated one.")
        usage = Usage(word_count(query), word_count(answer), "words")
        yield AnswerDone("done", answer, "extractive", cites, timings, notice, usage)
