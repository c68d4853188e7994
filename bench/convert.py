"""Which converter for which kind: PyMuPDF's own readers vs LibreOffice headless, against the
groundtruth Markdown of ../shared/corpus/formats.

For every file with a groundtruth and every converter that can open its kind, the file is converted
(in the sandbox, as ingestion does) and the PDF's text layer is compared with the groundtruth:
*recall* = share of the groundtruth's word tokens (lower-cased ``\\w+``, as a multiset) found in the
text layer; *precision* = share of the text layer's tokens found in the groundtruth. Time per page is
the conversion wall time (subprocess start included) over the pages produced; the arms alternate
over ``--rounds`` rounds (ABBA), and the medians come with 95 % bootstrap intervals.

    python -m bench.convert [--rounds 5] [--out docs/convert-comparison.md]

ends with ``RESULT`` lines per converter: mean recall and the median seconds per page.
"""

from __future__ import annotations

import argparse
import re
import time
from collections import Counter
from pathlib import Path

import pymupdf

from bench._stats import result_line
from mmrag.config import IngestConfig
from mmrag.errors import MMRAGError
from mmrag.evaluate.stats import interval
from mmrag.ingest.convert import convert_to_pdf
from mmrag.ingest.sniff import sniff_kind

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "formats"
MUPDF_OPENS = {"docx", "docm", "pptx", "xlsx", "xlsm", "epub", "md", "txt", "csv", "tsv", "html"}
LIBREOFFICE_OPENS = {"docx", "docm", "pptx", "xlsx", "xlsm", "doc", "ppt", "xls", "rtf", "odt", "odp", "ods",
                     "html", "csv", "tsv"}


def tokens(text: str) -> Counter[str]:
    return Counter(re.findall(r"\w+", text.lower()))


def overlap(gt: Counter[str], got: Counter[str]) -> tuple[float, float]:
    common = sum((gt & got).values())
    return common / max(1, sum(gt.values())), common / max(1, sum(got.values()))


def cases(corpus: Path) -> list[tuple[Path, str, str]]:
    """(file, kind, groundtruth text) for every file with a groundtruth."""
    out = []
    for gt in sorted(corpus.glob("*/groundtruth/*.md")):
        src = gt.parent.parent / gt.name[:-3]
        if src.exists():
            out.append((src, sniff_kind(src.read_bytes(), src.name).name, gt.read_text(errors="replace")))
    return out


def convert(path: Path, kind: str, converter: str, config: IngestConfig) -> tuple[float, int, str]:
    """(seconds, pages, text) of one conversion."""
    t0 = time.perf_counter()
    pdf = convert_to_pdf(path.read_bytes(), kind, config, converter)
    seconds = time.perf_counter() - t0
    with pymupdf.open("pdf", pdf) as doc:
        return seconds, doc.page_count, "\n".join(p.get_text() for p in doc)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, default=CORPUS)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--out", type=Path, default=None, help="write the per-file table (Markdown) here")
    args = ap.parse_args()
    config = IngestConfig()
    arms = {"mupdf": MUPDF_OPENS, "libreoffice": LIBREOFFICE_OPENS}
    rows: dict[tuple[str, str], dict[str, object]] = {}
    per_page: dict[str, list[float]] = {a: [] for a in arms}
    for r in range(args.rounds):
        for name in list(arms) if r % 2 == 0 else list(arms)[::-1]:
            spent, pages = 0.0, 0
            for path, kind, gt in cases(args.corpus):
                if kind not in arms[name]:
                    continue
                try:
                    seconds, n, text = convert(path, kind, name, config)
                except MMRAGError as exc:
                    rows[(path.name, name)] = {"kind": kind, "error": exc.message[:60]}
                    continue
                spent, pages = spent + seconds, pages + n
                rec, prec = overlap(tokens(gt), tokens(text))
                row = rows.setdefault((path.name, name), {"kind": kind, "pages": n, "recall": rec,
                                                          "precision": prec, "s": []})
                row["s"].append(seconds)  # type: ignore[attr-defined]
            per_page[name].append(spent / max(pages, 1))
        print(f"round {r + 1}/{args.rounds}: " + " | ".join(f"{a} {v[-1]:.3f} s/page" for a, v in per_page.items()
                                                             if v), flush=True)
    lines = ["| file | kind | converter | pages | recall | precision | s (median) |", "|---|---|---|---|---|---|---|"]
    for (file, conv), row in sorted(rows.items()):
        if "error" in row:
            lines.append(f"| {file} | {row['kind']} | {conv} | - | error: {row['error']} | | |")
            continue
        s = sorted(row["s"])[len(row["s"]) // 2]  # type: ignore[arg-type]
        lines.append(f"| {file} | {row['kind']} | {conv} | {row['pages']} | {row['recall']:.3f} | "
                     f"{row['precision']:.3f} | {s:.2f} |")
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    values: dict[str, object] = {}
    for name in arms:
        recalls = [float(row["recall"]) for (_, c), row in rows.items() if c == name and "recall" in row]  # type: ignore[arg-type]
        values[f"{name}_files"] = len(recalls)
        values[f"{name}_mean_recall"] = sum(recalls) / max(1, len(recalls))
        values[f"{name}_s_per_page"] = interval(per_page[name])
    print(result_line(values))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
