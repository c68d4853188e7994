"""MMLongBench-Doc's own question file as a suite's queries and page judgments (dataset format ``mmlongbench``).

Each line: ``doc_id`` (the PDF's file name), ``doc_type`` (the kind of document), ``question``,
``evidence_pages`` (1-based) and ``evidence_sources`` (Pure-text, Table, Chart, Figure, Layout). The
benchmark's setting is the right page *inside* the asked document, so every question is scoped to its own
document (:mod:`.scope`) and judged at page level (each evidence page 1). A question with no evidence page is
unanswerable: it carries the tag ``unanswerable`` and no judgment, so retrieval metrics skip it and the
report counts it (``judged_queries`` of ``queries``). A page number below 1 (the shared file has one
question whose evidence page is ``0``) judges nothing: a question left with no page is tagged
``invalid-evidence`` and is skipped like an unanswerable one. Question ids are ``mmlb-<line>`` (1-based line of the
file). The file stays where its licence put it: nothing is copied into the suite.
"""

from __future__ import annotations

import re
from pathlib import Path

from mmrag.errors import InvalidInput
from mmrag.evaluate.queries import Query, read_jsonl
from mmrag.evaluate.scope import QueryScope

EVIDENCE_SOURCES = {  # the benchmark's evidence kinds -> the tag suffix reports group by
    "pure-text (plain-text)": "text",
    "generalized-text (layout)": "layout",
    "table": "table",
    "chart": "chart",
    "figure": "figure",
}


def slug(text: str) -> str:
    """``"Research report / Introduction"`` -> ``"research-report-introduction"``."""
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-")


def load_mmlongbench(path: Path) -> tuple[list[Query], dict[str, dict[str, int]]]:
    """Queries (scoped to their document; tags ``kind:<doc type>``, ``evidence:<source>``,
    ``document:<file>``, ``unanswerable``) and page judgments ``file.pdf#page``."""
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for number, row in enumerate(read_jsonl(path), start=1):
        qid, doc, text = f"mmlb-{number:03d}", str(row.get("doc_id", "")), str(row.get("question", "")).strip()
        pages = row.get("evidence_pages")
        if not doc or not text or not isinstance(pages, list) or not all(isinstance(p, int) for p in pages):
            raise InvalidInput(f"{path.name}:{number}: every question needs doc_id, question and evidence_pages "
                               f"(a list of 1-based page numbers, empty when unanswerable)")
        valid = sorted({p for p in pages if p >= 1})
        sources = [EVIDENCE_SOURCES.get(str(s).lower(), slug(str(s))) for s in row.get("evidence_sources") or []]
        tags = [f"kind:{slug(str(row.get('doc_type', 'unknown')))}", *(f"evidence:{s}" for s in dict.fromkeys(sources)),
                f"document:{Path(doc).name}", *([] if pages else ["unanswerable"]),
                *(["invalid-evidence"] if pages and not valid else [])]
        queries.append(Query(id=qid, text=text, tags=tags, scope=QueryScope(documents=(Path(doc).name,))))
        if valid:
            qrels[qid] = {f"{Path(doc).name}#{p}": 1 for p in valid}
    return queries, qrels
