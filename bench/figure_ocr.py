"""What OCR of the pictures of born-digital pages costs (``MMRAG_INGEST__FIGURE_OCR``, mmrag/ingest/figure_text.py).

    python -m bench.figure_ocr --rounds 3 [--pdfs ../shared/corpus/mmlongbench-dev/pdf] [--ingest-s S]

Parses every page with a usable text layer of every PDF in ``--pdfs`` as a job's parse stage does
(:func:`mmrag.ingest.parse.parse_pdf_batch`, no render: a corpus of text spaces), with ``figure_ocr`` off and
on, the arms alternating over rounds (ABBA). Pages whose layer is unusable are OCRed whole in both arms, the
same work either way, and are left out of both: ``parse_ratio`` (on ÷ off, paired by round) is therefore an
upper bound of the parse stage's ratio. ``extra_s`` is what the pictures add to a whole pass (on − off).
With ``--ingest-s`` (the wall-clock seconds of a whole ingest of the same files with the feature off),
``ingest_ratio`` = 1 + ``extra_s`` ÷ that, with ``extra_s``'s interval: the bound of the ingest's ratio when the
pictures' OCR overlaps nothing (two cores: it runs beside embedding in the parse workers, so less).
Also printed: pages and regions read, words added. Target (issue 40): ``ingest_ratio_hi`` ≤ 1.3.
"""

from __future__ import annotations

import argparse
import time
from functools import partial
from pathlib import Path

from bench._http import ROOT
from bench._stats import alternate, machine_line, result_line
from mmrag.config import IngestConfig
from mmrag.evaluate.stats import Estimate, interval
from mmrag.ingest import pdf
from mmrag.ingest.parse import needs_ocr, parse_pdf_batch

PDFS = ROOT.parent / "shared" / "corpus" / "mmlongbench-dev" / "pdf"
DOC_ID = "b" * 32


def layer_pages(data: bytes, config: IngestConfig) -> tuple[list[int], int]:
    """The pages (1-based) whose text layer is used as it is (no whole-page OCR), and the page count."""
    doc = pdf.open_pdf(data, config)
    try:
        return [n for n in range(1, doc.page_count + 1)
                if not needs_ocr(pdf.page_words(doc[n - 1]), config.min_text_chars, partial(pdf.has_marks, doc, n),
                                 partial(pdf.layer_text, doc, n))], doc.page_count
    finally:
        doc.close()


def one_pass(files: dict[str, tuple[bytes, list[int]]], config: IngestConfig, tally: dict[str, int]) -> float:
    """Seconds to parse every listed page once; ``tally`` counts pages read for pictures and words added."""
    t0 = time.perf_counter()
    for data, pages in files.values():
        for n in pages:
            page = parse_pdf_batch(data, DOC_ID, config, first=n, last=n, images=False).pages[0]
            if "figure_ocr" in page.timings:
                tally["pages"] = tally.get("pages", 0) + 1
                tally["words"] = tally.get("words", 0) + sum(1 for w in page.words if w.confidence is not None)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pdfs", type=Path, default=PDFS)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--ingest-s", type=float, default=None,
                        help="wall-clock seconds of a whole ingest of --pdfs with figure_ocr off")
    args = parser.parse_args()
    off, on = IngestConfig(figure_ocr=False), IngestConfig(figure_ocr=True)  # the rest as configured by default
    files = {}
    for path in sorted(args.pdfs.glob("*.pdf")):
        data = path.read_bytes()
        pages, count = layer_pages(data, off)
        files[path.name] = (data, pages)
        print(f"{path.name}: {len(pages)} of {count} pages with a text layer", flush=True)
    tally: dict[str, int] = {}
    seconds = alternate({"off": lambda r: one_pass(files, off, {}),
                         "on": lambda r: one_pass(files, on, tally if r == 0 else {})}, args.rounds)
    ratios = [b / a for a, b in zip(seconds["off"], seconds["on"], strict=True)]
    extra = [b - a for a, b in zip(seconds["off"], seconds["on"], strict=True)]
    e = interval(extra)
    result: dict[str, Estimate | float | int | str] = {
        "layer_pages": sum(len(p) for _, p in files.values()), "figure_pages": tally.get("pages", 0),
        "words_added": tally.get("words", 0), "off_s": interval(seconds["off"]), "on_s": interval(seconds["on"]),
        "parse_ratio": interval(ratios), "extra_s": e}
    if args.ingest_s:
        result["ingest_ratio"] = Estimate(1 + e.value / args.ingest_s, 1 + e.lo / args.ingest_s,
                                          1 + e.hi / args.ingest_s, e.n)
    print(machine_line())
    print(result_line(result))


if __name__ == "__main__":
    main()
