"""A suite's questions as the runner reads them: queries (with an optional per-query scope), QA items, and
the JSON Lines reading every dataset format shares (:mod:`.suite`, :mod:`.financebench`, :mod:`.mmlongbench`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mmrag.errors import InvalidInput
from mmrag.evaluate.scope import QueryScope, parse_scope


@dataclass(frozen=True, slots=True)
class Query:
    id: str
    text: str
    tags: list[str] = field(default_factory=list)
    split: str | None = None  # the half of the suite it belongs to (``dataset.split`` selects one)
    scope: QueryScope | None = None  # searched only within these documents / pages (None: the whole corpus)


@dataclass(frozen=True, slots=True)
class QAItem:
    id: str
    question: str
    answers: list[str]
    evidence: list[str]  # doc keys "filename#page"
    tags: list[str] = field(default_factory=list)
    split: str | None = None


def read_jsonl(path: Path) -> list[dict[str, Any]]:
    """One JSON object a line (blank lines skipped); a missing file or a bad line is an :class:`InvalidInput`."""
    if not path.is_file():
        raise InvalidInput(f"missing dataset file {path}")
    rows = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as exc:
                raise InvalidInput(f"{path}:{number}: not JSON: {exc}") from exc
    return rows


def load_queries(path: Path) -> list[Query]:
    """Queries from JSONL (BEIR ``_id``/``text`` or ``id``/``query``; optional ``tags``, ``split``, ``scope``)."""
    queries = []
    for row in read_jsonl(path):
        qid = str(row.get("_id", row.get("id", "")))
        text = row.get("text", row.get("query", ""))
        if not qid or not text:
            raise InvalidInput(f"{path}: every query needs an id (_id) and a text, got {row}")
        tags = row.get("tags") or (row.get("metadata") or {}).get("tags") or []
        split = row.get("split")
        scope = parse_scope(row["scope"], qid) if row.get("scope") is not None else None
        queries.append(Query(id=qid, text=str(text), tags=[str(t) for t in tags],
                             split=str(split) if split else None, scope=scope))
    return queries


def load_qa(path: Path) -> list[QAItem]:
    """Page-level QA items; evidence is a list of ``{"document", "page"}`` (or ``"file#page"``)."""
    items: list[QAItem] = []
    for row in read_jsonl(path):
        evidence = [
            e if isinstance(e, str) else f"{Path(e['document']).name}#{int(e['page'])}" for e in row.get("evidence", [])
        ]
        answers = row.get("answers") or ([row["answer"]] if "answer" in row else [])
        if not row.get("question") or not answers:
            raise InvalidInput(f"{path}: every QA item needs a question and answers, got {row}")
        items.append(
            QAItem(
                id=str(row.get("id", len(items) + 1)),
                question=str(row["question"]),
                answers=[str(a) for a in answers],
                evidence=evidence,
                tags=[str(t) for t in row.get("tags", [])],
                split=str(row["split"]) if row.get("split") else None,
            )
        )
    return items
