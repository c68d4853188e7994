"""A question asked inside a conversation: the earlier turns, the retrieval query built from them, the
conversation the generator reads, stop sequences and the usage an answer reports.

Pure functions and plain data: the answer service (:mod:`mmrag.generate.answer_service`) uses them; the shells
only translate their wire formats (OpenAI chat messages, MCP tool arguments) into a :class:`Conversation`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

CONTEXT_TURNS = 6  # earlier turns the generator reads (the most recent ones)
TURN_CHARS = 1000  # characters of each earlier turn the generator reads
CONTEXT_QUERIES = 3  # earlier user turns added to the retrieval query (the most recent ones)
IMAGE_QUESTION = "What do the documents say about the pages that look like the image given?"


@dataclass(frozen=True, slots=True)
class Turn:
    """One earlier message of the conversation."""

    role: Literal["user", "assistant"]
    text: str


@dataclass(frozen=True, slots=True)
class Conversation:
    """What surrounds a question besides the question itself (all optional)."""

    earlier: Sequence[Turn] = ()  # turns before the question, oldest first
    instructions: str = ""  # the client's system messages, added to the generator's system prompt
    image: bytes | None = None  # an image in the question: it is a query image of the retrieval
    spaces: list[str] | None = None  # the spaces retrieval uses (None: the corpus's)
    stop: Sequence[str] = field(default_factory=tuple)  # generation ends before any of these strings


@dataclass(frozen=True, slots=True)
class Usage:
    """What an answer consumed. ``unit`` says what is counted: ``tokens`` of the VLM's tokenizer (visual
    tokens included in the prompt), or ``words`` (whitespace-separated) for an extractive answer, where no
    model reads or writes anything: the retrieval query's words and the answer's words."""

    prompt_tokens: int
    completion_tokens: int
    unit: Literal["tokens", "words"] = "tokens"


def word_count(text: str) -> int:
    return len(text.split())


def retrieval_query(question: str, earlier: Sequence[Turn], max_chars: int) -> str:
    """The question, after the most recent earlier user turns that fit in ``max_chars`` (for context:
    "and in 2021?" after "revenue of Acme in 2020" searches for both). A question longer than ``max_chars``
    is searched by its last ``max_chars`` characters (where a chat client's question usually is); the
    generator reads it whole."""
    parts = [question.strip()[-max_chars:].strip()]
    used = len(parts[0])
    for turn in [t for t in earlier if t.role == "user" and t.text.strip()][::-1][:CONTEXT_QUERIES]:
        text = turn.text.strip()
        if used + len(text) + 1 > max_chars:
            break
        parts.insert(0, text)
        used += len(text) + 1
    return "\n".join(p for p in parts if p)


def conversation_lines(earlier: Sequence[Turn]) -> list[str]:
    """The earlier turns as the generator reads them (the most recent ones, each cut to a length)."""
    if not earlier:
        return []
    lines = ["Conversation so far:"]
    for turn in list(earlier)[-CONTEXT_TURNS:]:
        text = " ".join(turn.text.split())
        lines.append(f"{'User' if turn.role == 'user' else 'Assistant'}: {text[:TURN_CHARS]}")
    return lines


class StopScanner:
    """Cuts a stream of text deltas before the first stop sequence. ``feed`` returns the text that is safe
    to emit (text that might be the start of a stop sequence is held back until it cannot be); once a stop
    sequence is seen, ``stopped`` is True and nothing more is emitted. ``flush`` returns what was held back.

    Lifecycle: one per answer; plain bookkeeping."""

    def __init__(self, stops: Sequence[str]) -> None:
        self.stops = [s for s in stops if s]
        self.stopped = False
        self._held = ""

    def feed(self, delta: str) -> str:
        if self.stopped:
            return ""
        if not self.stops:
            return delta
        text = self._held + delta
        cut = min((i for i in (text.find(s) for s in self.stops) if i >= 0), default=-1)
        if cut >= 0:
            self.stopped, self._held = True, ""
            return text[:cut]
        keep = max((k for s in self.stops for k in range(1, len(s)) if text.endswith(s[:k])), default=0)
        self._held = text[len(text) - keep:] if keep else ""
        return text[:len(text) - keep]

    def flush(self) -> str:
        held, self._held = self._held, ""
        return "" if self.stopped else held


def cut_at_stop(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """``text`` before its first stop sequence, and whether one was found."""
    scanner = StopScanner(stops)
    out = scanner.feed(text)
    return out + scanner.flush(), scanner.stopped
