"""Section paths against headings read by people: how often a judged page's path names what the page is about.

Gold (``--gold FILE.jsonl ...``): one object per judged page, written by annotators from the rendered
page images (never from mmrag): ``doc``, ``page`` (1-based), ``headings`` (every heading printed on the
page, top to bottom), ``in_force`` (the innermost heading of an earlier page the top of the page
continues, or null), ``item`` ("Part II, Item 8" or null) and ``title`` (the heading that best names
the page). The PDFs are looked up by file name under ``--pdfs`` folders.

Arms: the code as it is (``current``) and :mod:`mmrag.ingest.page_context` at a git ref (``--baseline``,
loaded from ``git show``), each run the way ingestion runs it: a page's path comes from the batch of
``--batch`` pages it falls in (reading on from the batch three back where the arm can, as the job's
window allows; else from the batch's look-back), its headings from the page itself (after the previous
page, for the running-header rule where the arm has one).

Per page (an arm's value is 0 or 1; a page counts for a measure only when the gold has what it needs):
``title``: the gold title is in the path; ``deepest``: the path's innermost heading is one of the page's
gold headings, its in-force heading or its title (a stale heading is neither); ``item``: the path names
the gold item's number; ``recall`` / ``precision``: of the page's gold headings found by the detector,
of the detected headings that are gold. Matching: case, spaces and punctuation removed, equal or (8
characters or more) one inside the other. The RESULT line has each measure's mean per arm and the
paired difference, with 95 % bootstrap intervals over pages; per company below it. Deterministic
(no timing): the machine's load does not matter.

    python -m bench.section_paths --gold eval/suites/filings/sections-gold.jsonl --baseline 7950f50
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import re
import subprocess
import sys
import tempfile
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import pymupdf

from bench._stats import result_line
from mmrag.evaluate.stats import Estimate, interval, mean_stat
from mmrag.ingest import page_context

MEASURES = ("title", "deepest", "item", "recall", "precision")
_ITEM = re.compile(r"\bitem\s*(\d+[a-z]?)\b", re.I)


def norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def same(a: str, b: str) -> bool:
    na, nb = norm(a), norm(b)
    return bool(na) and bool(nb) and (na == nb or (min(len(na), len(nb)) >= 8 and (na in nb or nb in na)))


def load_gold(files: list[Path]) -> list[dict[str, Any]]:
    """Gold rows, the last line for a (doc, page) winning (annotators append corrections)."""
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    for file in files:
        for line in file.read_text().splitlines():
            if line.strip():
                row = json.loads(line)
                rows[(row["doc"], int(row["page"]))] = row
    return [rows[k] for k in sorted(rows)]


def baseline_module(ref: str) -> ModuleType:
    """``mmrag/ingest/page_context.py`` as it was at git ``ref``, imported under another name."""
    source = subprocess.run(["git", "show", f"{ref}:mmrag/ingest/page_context.py"], check=True,
                            capture_output=True, text=True).stdout
    path = Path(tempfile.mkdtemp()) / "page_context_baseline.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("page_context_baseline", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def batch_paths(module: ModuleType, doc: pymupdf.Document, batch: int, ahead: int = 2) -> dict[int, list[str]]:
    """Every page's section path as ingestion's batches give it: each batch reads on from the state the batch
    ``ahead + 1`` back left, where the arm keeps one (the job's window), else from its own look-back."""
    out: dict[int, list[str]] = {}
    states: dict[int, Any] = {}
    for i, first in enumerate(range(1, doc.page_count + 1, batch)):
        last = min(doc.page_count, first + batch - 1)
        if hasattr(module, "SectionState"):
            paths, states[i] = module.section_paths(doc, first, last, states.get(i - ahead - 1))
        else:
            paths = module.section_paths(doc, first, last)
        out.update(paths)
    return out


def page_headings(module: ModuleType, doc: pymupdf.Document, number: int) -> list[str]:
    """The page's detected headings (after the previous page, for the running-header rule where the arm has one)."""
    page = doc.load_page(number - 1)
    if hasattr(module, "margin_keys") and number > 1:
        return [h.text for h in module.page_headings(page, module.margin_keys(doc.load_page(number - 2)))]
    return [h.text for h in module.page_headings(page)]


def page_scores(gold: dict[str, Any], path: list[str], headings: list[str]) -> dict[str, float | None]:
    """Each measure's 0/1 value for one page (None: the gold has nothing for it)."""
    on_page = [h for h in gold.get("headings") or [] if h]
    wanted = [*on_page, *(h for h in (gold.get("in_force"), gold.get("title")) if h)]
    item = _ITEM.search(gold.get("item") or "")
    scores: dict[str, float | None] = dict.fromkeys(MEASURES)
    if gold.get("title"):
        scores["title"] = float(any(same(gold["title"], p) for p in path))
    if wanted:
        scores["deepest"] = float(bool(path) and any(same(path[-1], w) for w in wanted))
    if item:
        scores["item"] = float(any((m := _ITEM.match(p.strip())) is not None and m[1].lower() == item[1].lower()
                                   for p in path))
    if on_page:
        scores["recall"] = sum(any(same(g, h) for h in headings) for g in on_page) / len(on_page)
    if headings:
        scores["precision"] = sum(any(same(h, g) for g in on_page) for h in headings) / len(headings)
    return scores


def estimate(values: list[float]) -> Estimate:
    return interval(values, mean_stat)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gold", type=Path, nargs="+", required=True)
    ap.add_argument("--pdfs", type=Path, nargs="+",
                    default=[Path("../shared/corpus/filings/pdf"), Path("../shared/corpus/financebench-dev/pdf")])
    ap.add_argument("--baseline", default="HEAD", help="git ref of the page_context to compare with")
    ap.add_argument("--batch", type=int, default=16, help="ingestion's batch_pages")
    ap.add_argument("--show", action="store_true", help="print each page's paths and gold")
    args = ap.parse_args(argv)
    arms: dict[str, Any] = {"baseline": baseline_module(args.baseline), "current": page_context}
    gold = load_gold(args.gold)
    scores: dict[str, list[dict[str, float | None]]] = {a: [] for a in arms}
    companies: list[str] = []
    docs: dict[str, pymupdf.Document] = {}
    paths: dict[tuple[str, str], dict[int, list[str]]] = {}
    find: Callable[[str], Path] = lambda name: next(d / name for d in args.pdfs if (d / name).exists())  # noqa: E731
    for row in gold:
        doc = docs.setdefault(row["doc"], pymupdf.open(find(row["doc"])))
        companies.append(row["doc"].split("_")[0])
        for name, module in arms.items():
            if (name, row["doc"]) not in paths:
                paths[name, row["doc"]] = batch_paths(module, doc, args.batch)
            path, headings = paths[name, row["doc"]][int(row["page"])], page_headings(module, doc, int(row["page"]))
            scores[name].append(page_scores(row, path, headings))
            if args.show:
                print(f"{row['doc']}#{row['page']} {name}: {path} | {headings}")
        if args.show:
            print(f"  gold: {row}")
    out: dict[str, Estimate | float | int | str] = {"pages": len(gold)}
    by_company: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for measure in MEASURES:
        kept = [i for i, s in enumerate(scores["current"]) if s[measure] is not None]
        if not kept:
            continue
        base = [float(scores["baseline"][i][measure] or 0.0) for i in kept]
        cur = [float(scores["current"][i][measure] or 0.0) for i in kept]
        out[f"{measure}_baseline"] = estimate(base)
        out[f"{measure}_current"] = estimate(cur)
        out[f"{measure}_diff"] = estimate([c - b for c, b in zip(cur, base, strict=True)])
        out[f"{measure}_n"] = len(kept)
        for i, b, c in zip(kept, base, cur, strict=True):
            by_company[companies[i]][f"{measure}_baseline"].append(b)
            by_company[companies[i]][f"{measure}_current"].append(c)
    for company, values in sorted(by_company.items()):
        print(company + ": " + " ".join(f"{k}={sum(v) / len(v):.2f}(n={len(v)})" for k, v in values.items()))
    print(result_line(out))


if __name__ == "__main__":
    main()
