"""Where ingestion time goes: pages/s end to end, seconds per page per step, chunks and bytes per page,
this tree against the previous commit's code, tables on and off.

File sets (fixed; ``--quick`` takes the first half of each):

- ``filings``: born-digital SEC filings of ../shared/corpus/filings (earnings releases, 8-Ks, and the
  statements of a 10-K: 3M 2018 pages 56-65), 31 pages;
- ``whole``: six whole filings (eBay's 2016 and 2015 10-Ks, McDonald's 2022 10-K, Salesforce's 2023 Q3
  10-Q, two earnings releases), 429 pages (``--quick``: the three 10-Ks, 337 pages): the product-defaults
  figure (``--sets whole --arms new``, ``--variant`` for other precisions);
- ``docling``: the small docling PDFs (tables, code, pictures, a results table), 14 pages.

Arms, each a fresh subprocess and data folder per round (``bench/ingest_arm.py``; the model load is
not timed), order ABBA-alternated over ``--rounds``:

- ``new``: this tree's defaults (text + BM25 + document spaces, tables on);
- ``new_off``: this tree, ``MMRAG_INGEST__TABLES=false``;
- ``base``: the previous commit's code and defaults (``--base``: a tree exported with ``git archive``
  of the merge base with main, run with ``PYTHONPATH`` on it: main's own code path, its layout-model
  tables and page renders included).

Per round and set: pages/s (submit to the job's end, ``Pipeline.ingest.uploads``), the job's seconds
per page per step (``parse_text``, ``parse_tables``, ``parse_render``, ``parse_encode_png``,
``parse_ocr``, ``embed_<space>``, ``write``; the previous code reports ``parse``/``embed``/``write``
only), chunks per page (rows of the stored text multi-vectors), bytes per page of each store.

    python -m bench.ingest [--rounds 5] [--quick] [--base DIR]

ends with ``RESULT pages_per_s=.. (filings, new) speedup=.. (new / base, paired per round)
tables_cost=.. (new / new_off seconds, paired) ...``; ``--variant NAME=JSON`` adds an arm of this tree
with settings overrides (``NAME_vs_new``: its pages/s over new's, paired).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench._stats import machine_line, result_line, verdict
from mmrag.evaluate.stats import Estimate, interval, paired_ratios

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpus"
if not SHARED.exists():
    SHARED = Path(os.environ.get("MMRAG_TEST_CORPUS", "/work/shared/corpus/docling")).parent
FILINGS = SHARED / "filings" / "pdf"
DOCLING = SHARED / "docling" / "pdf"
SETS: dict[str, list[tuple[str, Path, int, int]]] = {  # name, file, first page, last page (0: to the end)
    "filings": [("MCDONALDS_2023Q1_EARNINGS.pdf", FILINGS / "MCDONALDS_2023Q1_EARNINGS.pdf", 1, 0),
                ("MCDONALDS_8K_dated-2023-02-13.pdf", FILINGS / "MCDONALDS_8K_dated-2023-02-13.pdf", 1, 0),
                ("SALESFORCE_2021_8K_dated-2023-01-04.pdf", FILINGS / "SALESFORCE_2021_8K_dated-2023-01-04.pdf", 1, 0),
                ("3M_2018_10K-p56-65.pdf", FILINGS / "3M_2018_10K.pdf", 56, 65),
                ("SALESFORCE_2024Q1_EARNINGS-p1-10.pdf", FILINGS / "SALESFORCE_2024Q1_EARNINGS.pdf", 1, 10)],
    # whole filings, none of them hand-picked pages: 429 pages (--quick: the three 10-Ks, 337 pages)
    "whole": [(p, FILINGS / p, 1, 0) for p in ("EBAY_2016_10K.pdf", "EBAY_2015_10K.pdf", "MCDONALDS_2022_10K.pdf",
                                               "SALESFORCE_2023Q3_10Q.pdf", "MCDONALDS_2023Q2_EARNINGS.pdf",
                                               "MCDONALDS_2022Q4_EARNINGS.pdf")],
    "docling": [(p, DOCLING / p, 1, 0) for p in ("2305.03393v1-pg9.pdf", "code_and_formula.pdf", "multi_page.pdf",
                                                 "normal_4pages.pdf", "picture_classification.pdf")],
}
STEPS = ("plan", "parse_sections", "parse_text", "parse_tables", "parse_render", "parse_encode_png", "parse_ocr",
         "parse", "embed_text", "embed_bm25", "embed_document", "embed", "write")


def base_tree(spec: str | None) -> Path:
    """The previous commit's code: ``spec`` (a folder), else ``git archive`` of the merge base with main."""
    if spec:
        return Path(spec).resolve()
    commit = subprocess.run(["git", "merge-base", "HEAD", "main"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    tree = Path(tempfile.gettempdir()) / f"mmrag-base-{commit[:12]}"
    if not (tree / "mmrag").exists():
        tree.mkdir(parents=True, exist_ok=True)
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=True).stdout
        subprocess.run(["tar", "-x", "-C", str(tree)], input=archive, check=True)
    return tree


def run_arm(tree: Path, files: list[tuple[str, Path, int, int]], settings: dict[str, Any]) -> dict[str, Any]:
    return run_in_tree(tree, "ingest_arm.py", {"files": [[n, str(p), a, b] for n, p, a, b in files],
                                               "settings": settings})


def run_in_tree(tree: Path, script: str, spec: dict[str, Any]) -> dict[str, Any]:
    """``bench/<script> SPEC.json`` run on ``tree``'s code (``PYTHONPATH``: a ``git archive`` of another commit, or
    this checkout); the JSON object its last line of output prints."""
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        env = {**os.environ, "PYTHONPATH": str(tree), "HF_HUB_OFFLINE": "1"}
        out = subprocess.run([sys.executable, str(ROOT / "bench" / script), f.name], cwd=tree, env=env,
                             capture_output=True, text=True)
        if out.returncode != 0:
            raise RuntimeError(f"arm failed in {tree}:\n{out.stderr[-3000:]}")
        return dict(json.loads(out.stdout.strip().splitlines()[-1]))
    finally:
        Path(f.name).unlink(missing_ok=True)


def describe(name: str, runs: list[dict[str, Any]]) -> str:
    """Median seconds per page per step, chunks and bytes per page of one arm on one set."""
    pages = runs[0]["pages"]
    steps = {s: statistics.median(r["timings"].get(s, 0.0) for r in runs) / pages for s in STEPS}
    sizes = {k: statistics.median(r["sizes"][k] for r in runs) / pages for k in runs[0]["sizes"]}
    ratio = statistics.median(r["sizes"]["data"] / r["source_bytes"] for r in runs)
    return (f"{name:8s} {pages / statistics.median(r['seconds'] for r in runs):5.2f} pages/s | s/page "
            + " ".join(f"{s} {v:.4f}" for s, v in steps.items() if v)
            + f" | chunks/page {statistics.median(r['chunks'] for r in runs) / pages:.2f} | bytes/page "
            + " ".join(f"{k} {v:,.0f}" for k, v in sizes.items()) + f" | data/source {ratio:.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--quick", action="store_true", help="the first half of each file set")
    ap.add_argument("--base", help="folder of the previous commit's tree (default: git archive of the merge base)")
    ap.add_argument("--sets", default="filings,docling")
    ap.add_argument("--arms", default="new,new_off,base")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=JSON",
                    help='an extra arm of this tree with settings overrides, e.g. t1={"jobs": {"embed_threads": 1}}')
    args = ap.parse_args()
    base = base_tree(args.base)
    arms = {"new": (ROOT, {}), "new_off": (ROOT, {"ingest": {"tables": False}}), "base": (base, {})}
    arms = {k: v for k, v in arms.items() if k in args.arms.split(",")}
    for spec in args.variant:
        name, _, overrides = spec.partition("=")
        arms[name] = (ROOT, json.loads(overrides))
    sets = {s: SETS[s][: (len(SETS[s]) + 1) // 2] if args.quick else SETS[s] for s in args.sets.split(",")}
    print(machine_line(), f"| base tree {base} | sets " + ", ".join(f"{s}: {len(f)} files" for s, f in sets.items()),
          flush=True)
    runs: dict[tuple[str, str], list[dict[str, Any]]] = {(a, s): [] for a in arms for s in sets}
    for r in range(args.rounds):
        for arm in list(arms) if r % 2 == 0 else list(arms)[::-1]:
            tree, settings = arms[arm]
            for s, files in sets.items():
                x = run_arm(tree, files, settings)
                runs[(arm, s)].append(x)
                print(f"round {r + 1} {arm} {s}: {x['pages']} pages {x['seconds']:.2f} s "
                      f"({x['pages'] / x['seconds']:.2f} pages/s) load {x['load']:.1f}", flush=True)
    values: dict[str, Estimate | float | int | str] = {}
    for s in sets:
        print(f"== {s}")
        for arm in arms:
            print(describe(arm, runs[(arm, s)]))
        rate = {a: [x["pages"] / x["seconds"] for x in runs[(a, s)]] for a in arms}
        suffix = "" if s == "filings" else f"_{s}"
        values[f"pages_per_s{suffix}"] = interval(rate["new"])
        if "base" in arms:
            values[f"pages_per_s_base{suffix}"] = interval(rate["base"])
            values[f"speedup{suffix}"] = interval(paired_ratios(rate["new"], rate["base"]))
        if "new_off" in arms:
            values[f"tables_cost{suffix}"] = interval(paired_ratios(rate["new_off"], rate["new"]))
        for name in (a for a in arms if a not in ("new", "new_off", "base")):
            values[f"{name}_vs_new{suffix}"] = interval(paired_ratios(rate[name], rate["new"]))
        values[f"data_ratio{suffix}"] = interval([x["sizes"]["data"] / x["source_bytes"] for x in runs[("new", s)]])
    print(machine_line())
    if "filings" in sets:
        print(verdict("pages_per_s (filings, tables on)", values["pages_per_s"], 4.0, at_least=True))  # type: ignore[arg-type]
        if "new_off" in arms:
            print(verdict("tables_cost (on / off time)", values["tables_cost"], 1.3, at_least=False))  # type: ignore[arg-type]
    if "whole" in sets:
        print(verdict("pages_per_s_whole (whole filings, defaults)", values["pages_per_s_whole"],  # type: ignore[arg-type]
                      8.0, at_least=True))
    print(result_line(values))


if __name__ == "__main__":
    main()
