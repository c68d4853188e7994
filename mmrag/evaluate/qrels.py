"""Judgments of a suite: qrels files (BEIR TSV or TREC), and for suites judged at document level the
split into document and page judgments and the expansion of document glob patterns."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from mmrag.errors import InvalidInput

Judgments = dict[str, dict[str, int]]  # query id -> document or page key -> grade
_PAGE_KEY = re.compile(r"(?P<name>[^*?\[\]]+)#(?P<page>\d+)")


def load_qrels(path: Path) -> dict[str, dict[str, int]]:
    """Qrels from a BEIR TSV (``query-id corpus-id score``) or a TREC qrels file."""
    if not path.is_file():
        raise InvalidInput(f"missing qrels file {path}")
    qrels: dict[str, dict[str, int]] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split("\t") if "\t" in line else line.split()
        if not parts or not line.strip() or line.startswith("#") or parts[0] == "query-id":
            continue
        if len(parts) == 4:
            parts = [parts[0], parts[2], parts[3]]
        if len(parts) != 3:
            raise InvalidInput(f"{path}:{number}: expected 'query-id corpus-id score', got {line!r}")
        qid, doc, grade = (p.strip() for p in parts)
        try:
            qrels.setdefault(qid, {})[doc] = int(grade)
        except ValueError as exc:
            raise InvalidInput(f"{path}:{number}: relevance must be an integer, got {grade!r}") from exc
    return qrels


def split_page_judgments(qrels: Judgments) -> tuple[Judgments, Judgments]:
    """A document suite's judgments as (document judgments, page judgments): a key ``name.pdf#12`` judges
    that page, and its document at the same grade (a document judged several ways keeps its highest)."""
    documents: dict[str, dict[str, int]] = {}
    pages: dict[str, dict[str, int]] = {}
    for qid, judged in qrels.items():
        docs = documents.setdefault(qid, {})
        for key, grade in judged.items():
            m = _PAGE_KEY.fullmatch(key)
            name = m["name"] if m else key
            if m:
                pages.setdefault(qid, {})[key] = grade
            docs[name] = max(grade, docs.get(name, grade))
    return documents, pages


def expand_document_patterns(qrels: dict[str, dict[str, int]], names: list[str],
                             suite: str) -> dict[str, dict[str, int]]:
    """Document judgments with glob patterns (``*2023 Q3 AAPL*``) replaced by the basenames they match;
    a document matched by several patterns keeps its highest grade. A pattern matching nothing is an error."""
    out: dict[str, dict[str, int]] = {}
    for qid, judged in qrels.items():
        expanded = out.setdefault(qid, {})
        for pattern, grade in judged.items():
            matched = [n for n in names if fnmatch.fnmatchcase(n, pattern)]
            if not matched:
                raise InvalidInput(f"suite {suite}: query {qid} judges {pattern!r}, which names no document "
                                   f"of the corpus (judge: document takes basenames or glob patterns)")
            for name in matched:
                expanded[name] = max(grade, expanded.get(name, grade))
    return out
