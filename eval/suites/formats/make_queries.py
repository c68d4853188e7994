"""Build queries.jsonl / qrels.tsv of the formats suite from the groundtruth Markdown (deterministic).

Per groundtruth file: up to 3 *phrase* queries (8 consecutive words from the middle of evenly spaced
prose lines) and up to 2 *cell* queries (a table row's label, a column header and the cell under it:
the cell retrieved by its row and column). Each query is tagged with its kind (the corpus folder)
and ``phrase`` or ``cell``; it is judged relevant to its source document only. Emails have no
groundtruth: their queries are written by hand below.

    python eval/suites/formats/make_queries.py [--corpus ../shared/corpus/formats]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE.parents[2].parent / "shared" / "corpus" / "formats"
EMAIL = [("eml_simple.eml", "Simple Email hello Bob simple email body"),
         ("eml_with_attachment.eml", "Email with Attachment Alice Example")]


def prose_lines(md: str) -> list[str]:
    out = []
    for line in md.splitlines():
        line = re.sub(r"!\[[^\]]*\]\([^)]*\)|\[([^\]]*)\]\([^)]*\)", r"\1", line)
        line = re.sub(r"[#*_`>]+", " ", line).strip(" -")
        if line.startswith("|") or len(line.split()) < 8:
            continue
        out.append(" ".join(line.split()))
    return out


def table_cells(md: str) -> list[tuple[str, str, str]]:
    """(row label, column header, cell) from Markdown tables."""
    out: list[tuple[str, str, str]] = []
    header: list[str] | None = None
    for line in md.splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if all(re.fullmatch(r":?-+:?", c) for c in cells if c):
            continue
        if header is None:
            header = cells
            continue
        if len(cells) >= 2 and cells[0] and len(header) > 1 and header[1] and cells[1] and cells[1] != cells[0]:
            out.append((cells[0], header[1], cells[1]))
    return out


def spread(items: list, n: int) -> list:
    if len(items) <= n:
        return items
    return [items[round(i * (len(items) - 1) / (n - 1))] for i in range(n)] if n > 1 else [items[len(items) // 2]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    args = ap.parse_args()
    queries, qrels = [], []
    for gt in sorted(args.corpus.glob("*/groundtruth/*.md")):
        kind, source = gt.parent.parent.name, gt.name[:-3]
        if not (gt.parent.parent / source).exists():
            continue
        md = gt.read_text(errors="replace")
        lines = spread(prose_lines(md), 3)
        picks = [("phrase", " ".join(line.split()[len(line.split()) // 2 - 4:][:8])) for line in lines]
        picks += [("cell", f"{row} {col} {cell}") for row, col, cell in spread(table_cells(md), 2)]
        for i, (tag, text) in enumerate(picks, start=1):
            qid = f"{Path(source).stem}-{tag}{i}"
            queries.append({"_id": qid, "text": text, "tags": [kind, tag]})
            qrels.append((qid, source))
    for i, (source, text) in enumerate(EMAIL, start=1):
        queries.append({"_id": f"email-{i}", "text": text, "tags": ["email", "phrase"]})
        qrels.append((f"email-{i}", source))
    (HERE / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in queries))
    (HERE / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t1\n" for q, d in qrels))
    print(f"{len(queries)} queries over {len({d for _, d in qrels})} documents")


if __name__ == "__main__":
    main()
