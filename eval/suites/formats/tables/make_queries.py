"""queries.jsonl / qrels.tsv of the table-cell suite from questions.json (question, document, cell value).

A page is relevant when its plain text layer (PyMuPDF words, no table extraction) holds the cell's
value, so the judgments do not depend on the arm being measured.

    python eval/suites/formats/tables/make_queries.py
"""

from __future__ import annotations

import json
from pathlib import Path

import pymupdf

HERE = Path(__file__).resolve().parent
SHARED = HERE.parents[3].parent / "shared" / "corpus"
FOLDERS = [SHARED / "sec-10q" / "pdf", SHARED / "docling" / "pdf"]


def main() -> None:
    rows = json.loads((HERE / "questions.json").read_text())
    queries, qrels = [], []
    for qid, question, document, value in rows:
        path = next(f / document for f in FOLDERS if (f / document).exists())
        with pymupdf.open(path) as doc:
            pages = [i + 1 for i, p in enumerate(doc) if value in {w[4].strip("$()") for w in p.get_text("words")}]
        assert pages, (qid, value)
        queries.append({"_id": qid, "text": question, "tags": ["sec-10q" if "AAPL" in document else "docling"]})
        qrels.extend(f"{qid}\t{document}#{p}\t1\n" for p in pages)
    (HERE / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (HERE / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(qrels))
    print(f"{len(queries)} questions, {len(qrels)} relevant pages")


if __name__ == "__main__":
    main()
