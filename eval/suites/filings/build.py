"""Build the filings suites' query and judgment files from questions.yaml (deterministic).

    python eval/suites/filings/build.py [--corpus ../shared/corpus/filings] [--check]

questions.yaml holds every question with its document, its judged pages (1-based page index in the
PDF: 2 = where the question points, 1 = another page of the same document stating the answer or a
part of it), the answer read on the page and hand-written tags. This script

- checks each question (known tags, a document of the corpus, pages inside it, a grade-2 page);
- adds the tags ``company:<name>`` and ``kind:<10-K|10-Q|8-K|earnings>`` from the file name;
- gives each question a ``split`` (``tune`` or ``test``): questions keep the split queries.jsonl
  already records for them (the halves are fixed once written); a new question joins the smaller
  half of its stratum (company x table/other), ties broken by a seeded hash of its id;
- writes ``queries.jsonl`` and ``qrels.tsv`` here and, for the few-documents suite, the questions on
  its twelve documents to ``../filings-few/``.

``--check`` writes nothing and exits 1 when the files on disk differ from what would be written.
"""

from __future__ import annotations

import argparse
import fnmatch
import hashlib
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pymupdf
import yaml

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
CORPUS = REPO.parent / "shared" / "corpus" / "filings"
FEW = HERE.parent / "filings-few"
SEED = "filings-2024"
SPLITS = ("tune", "test")
COMPANIES = {"3M": "3m", "COCACOLA": "coca-cola", "EBAY": "ebay", "JPMORGAN": "jpmorgan",
             "MCDONALDS": "mcdonalds", "SALESFORCE": "salesforce"}
TAGS = {
    "table", "text",  # the answer is a cell of a table / a statement in prose
    "income-statement", "balance-sheet", "cash-flow", "equity", "note", "segment", "debt", "tax",
    "risk-factors", "mdna", "litigation", "acquisition", "event", "executive", "business",
    "multi-year", "multi-page", "long-instruction", "latest", "unreadable-text",
    "period:fy-yyyy", "period:fy-yy", "period:fiscal", "period:annual-report", "period:plain-year",
    "period:date", "period:quarter", "period:half", "period:range", "period:latest",
    "name:common", "name:ticker", "name:abbrev", "name:legal",
}
FEW_DOCUMENTS = (  # every McDonald's and Salesforce document but Salesforce's 10-K: 12 documents, 265 pages
    "MCDONALDS_2022_10K.pdf", "MCDONALDS_2022Q4_EARNINGS.pdf", "MCDONALDS_2023Q1_EARNINGS.pdf",
    "MCDONALDS_2023Q2_EARNINGS.pdf", "MCDONALDS_8K_dated-2023-01-06.pdf", "MCDONALDS_8K_dated-2023-02-13.pdf",
    "MCDONALDS_8K_dated-2023-08-14.pdf", "SALESFORCE_2023Q3_10Q.pdf", "SALESFORCE_2024Q1_EARNINGS.pdf",
    "SALESFORCE_2024Q2_EARNINGS.pdf", "SALESFORCE_2021_8K_dated-2021-07-21.pdf",
    "SALESFORCE_2021_8K_dated-2023-01-04.pdf",
)


def company(document: str) -> str:
    return COMPANIES[document.split("_", 1)[0]]


def kind(document: str) -> str:
    stem = Path(document).stem
    for suffix, name in (("_10K", "10-K"), ("_10Q", "10-Q"), ("_EARNINGS", "earnings")):
        if stem.endswith(suffix):
            return name
    if "_8K_" in stem:
        return "8-K"
    raise ValueError(f"{document}: unknown document kind")


def load_questions(corpus: Path) -> list[dict[str, Any]]:
    """questions.yaml, checked, with the company and kind tags added."""
    rows = yaml.safe_load((HERE / "questions.yaml").read_text(encoding="utf-8"))["questions"]
    counts: dict[str, int] = {}
    ids = Counter(row["id"] for row in rows)
    errors = [f"duplicate id {qid}" for qid, n in ids.items() if n > 1]
    for row in rows:
        document, pages = row["doc"], {int(p): int(g) for p, g in row["pages"].items()}
        if document not in counts:
            path = corpus / "pdf" / document
            if not path.is_file():
                errors.append(f"{row['id']}: no document {path}")
                continue
            with pymupdf.open(path) as pdf:
                counts[document] = pdf.page_count
        bad = [p for p in pages if not 1 <= p <= counts[document]]
        unknown = sorted(set(row["tags"]) - TAGS)
        if bad or unknown or 2 not in pages.values() or set(pages.values()) - {1, 2} or not row.get("answer"):
            errors.append(f"{row['id']}: pages outside the document {bad}, unknown tags {unknown}, "
                          f"grades {sorted(set(pages.values()))} (need a 2), answer {row.get('answer')!r}")
        row["pages"] = dict(sorted(pages.items(), key=lambda item: (-item[1], item[0])))
        row["tags"] = [*row["tags"], f"company:{company(document)}", f"kind:{kind(document)}"]
    if errors:
        raise SystemExit("questions.yaml:\n  " + "\n  ".join(errors))
    return rows


def assign_splits(rows: list[dict[str, Any]], known: dict[str, str]) -> dict[str, str]:
    """Each id's split: the recorded one, else the smaller half of its stratum (seeded hash breaks ties)."""
    splits = {row["id"]: known[row["id"]] for row in rows if known.get(row["id"]) in SPLITS}
    strata: dict[tuple[str, bool], list[str]] = {}
    for row in rows:
        strata.setdefault((company(row["doc"]), "table" in row["tags"]), []).append(row["id"])
    for members in strata.values():
        sizes = Counter(splits[qid] for qid in members if qid in splits)
        new = sorted((qid for qid in members if qid not in splits),
                     key=lambda qid: hashlib.sha256(f"{SEED}:{qid}".encode()).hexdigest())
        for qid in new:
            half = min(SPLITS, key=lambda s: (sizes[s], hashlib.sha256(f"{SEED}:{qid}:{s}".encode()).hexdigest()))
            splits[qid] = half
            sizes[half] += 1
    return splits


def recorded_splits(path: Path) -> dict[str, str]:
    if not path.is_file():
        return {}
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    return {row["_id"]: row.get("split", "") for row in rows}


def render(rows: list[dict[str, Any]], splits: dict[str, str]) -> tuple[str, str]:
    """(queries.jsonl, qrels.tsv) text for ``rows``."""
    queries = [json.dumps({"_id": row["id"], "text": row["q"], "tags": row["tags"], "split": splits[row["id"]],
                           "document": row["doc"], "answer": row["answer"]}, ensure_ascii=False)
               for row in rows]
    qrels = ["query-id\tcorpus-id\tscore"]
    qrels += [f"{row['id']}\t{row['doc']}#{page}\t{grade}" for row in rows for page, grade in row["pages"].items()]
    return "\n".join(queries) + "\n", "\n".join(qrels) + "\n"


def few_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions on the few-documents set (a "latest" question only where its document is still the
    latest of its company and kind among those documents)."""
    chosen = set(FEW_DOCUMENTS)
    kept = [row for row in rows if row["doc"] in chosen]
    for row in kept:
        if "latest" in row["tags"]:
            peers = sorted(d for d in chosen if company(d) == company(row["doc"]) and kind(d) == kind(row["doc"]))
            if peers[-1] != row["doc"] and kind(row["doc"]) != "8-K":
                raise SystemExit(f"{row['id']}: not the latest {kind(row['doc'])} among the few documents")
    return kept


LEAN = HERE.parent / "filings-lean"
LEAN_DOCUMENTS = ("3M_2015_10K.pdf", "3M_2021_10K.pdf", "COCACOLA_2020_10K.pdf", "EBAY_2016_10K.pdf",
                  "EBAY_2017_10K.pdf", "JPMORGAN_2022Q2_10Q.pdf", "MCDONALDS_*", "SALESFORCE_*")
"""The lean set (1,361 pages): what the learned ranker's folds are measured on where the whole suite cannot
be ingested in time (two look-alike 10-Ks of 3M and eBay, one of Coca-Cola and JPMorgan, every McDonald's
and Salesforce filing)."""


def lean_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The questions on the lean set, but a "latest" question whose document is not the latest of its
    company and kind there."""
    def chosen(doc: str) -> bool:
        return any(fnmatch.fnmatch(doc, pattern) for pattern in LEAN_DOCUMENTS)
    docs = sorted({row["doc"] for row in rows if chosen(row["doc"])})
    kept = []
    for row in rows:
        if not chosen(row["doc"]):
            continue
        peers = [d for d in docs if company(d) == company(row["doc"]) and kind(d) == kind(row["doc"])]
        if "latest" in row["tags"] and peers[-1] != row["doc"] and kind(row["doc"]) != "8-K":
            continue
        kept.append(row)
    return kept


def outputs(corpus: Path) -> dict[Path, str]:
    rows = load_questions(corpus)
    splits = assign_splits(rows, recorded_splits(HERE / "queries.jsonl"))
    queries, qrels = render(rows, splits)
    few_queries, few_qrels = render(few_rows(rows), splits)
    lean_queries, lean_qrels = render(lean_rows(rows), splits)
    return {HERE / "queries.jsonl": queries, HERE / "qrels.tsv": qrels,
            FEW / "queries.jsonl": few_queries, FEW / "qrels.tsv": few_qrels,
            LEAN / "queries.jsonl": lean_queries, LEAN / "qrels.tsv": lean_qrels}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=CORPUS, help="the shared filings folder (holding pdf/)")
    parser.add_argument("--check", action="store_true", help="only check that the written files are current")
    args = parser.parse_args()
    stale = []
    for path, text in outputs(args.corpus).items():
        if path.is_file() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not args.check:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    if args.check and stale:
        print("out of date: " + ", ".join(str(p) for p in stale), file=sys.stderr)
        return 1
    print(("would rewrite " if args.check else "wrote ") + (", ".join(p.name for p in stale) or "nothing"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
