"""FinanceBench's own question file as a suite's queries and page judgments (dataset format ``financebench``)."""

from __future__ import annotations

from pathlib import Path

from mmrag.errors import InvalidInput
from mmrag.evaluate.queries import Query, read_jsonl


def load_financebench(path: Path) -> tuple[list[Query], dict[str, dict[str, int]]]:
    """Queries and page judgments from FinanceBench's question file: each evidence page
    (``evidence_page_num``, 0-based) of the question's ``doc_name`` is judged 1 (``file.pdf#page``, 1-based).
    Tags: ``kind:<question_type>`` and ``company:<company, lower-case>`` (``dataset.tags`` selects by them)."""
    queries: list[Query] = []
    qrels: dict[str, dict[str, int]] = {}
    for row in read_jsonl(path):
        qid, text, doc = str(row.get("financebench_id", "")), str(row.get("question", "")), row.get("doc_name")
        if not qid or not text or not doc:
            raise InvalidInput(f"{path.name}: every question needs financebench_id, question and doc_name")
        tags = [f"kind:{row['question_type']}"] if row.get("question_type") else []
        queries.append(Query(id=qid, text=text, tags=[*tags, f"company:{str(row.get('company', '')).lower()}"]))
        pages = {int(e["evidence_page_num"]) + 1 for e in row.get("evidence") or [] if "evidence_page_num" in e}
        qrels[qid] = {f"{doc}.pdf#{p}": 1 for p in sorted(pages)} or {f"{doc}.pdf": 1}
    return queries, qrels
