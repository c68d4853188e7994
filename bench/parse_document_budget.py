"""The document's total parse budget (issue 42), measured by ``python -m bench.parse_budget --document-pages N``
(its docstring says what is printed): a long real filing parsed as one runner thread parses a file, and a
document of slow pages held to a small budget against none."""

from __future__ import annotations

import time

import pymupdf

from bench._stats import alternate, machine_line, result_line
from bench.ingest import FILINGS
from mmrag.config import IngestConfig
from mmrag.errors import TooComplex
from mmrag.evaluate.stats import interval, paired_ratios
from mmrag.jobs.parse_pool import DocumentBudget, ParsePool
from mmrag.jobs.parse_worker import ParseRequest

BATCH = 16  # MMRAG_JOBS__BATCH_PAGES's default
UNBOUNDED = 7 * 86400.0


def long_filing(pages: int) -> bytes:
    """The 3M 10-Ks of the filings corpus joined (oldest first, repeated if need be) to ``pages`` pages."""
    out = pymupdf.open()
    sources = sorted(FILINGS.glob("3M_*_10K.pdf"))
    while out.page_count < pages:
        for path in sources:
            with pymupdf.open(path) as doc:
                out.insert_pdf(doc, to_page=min(doc.page_count, pages - out.page_count) - 1)
            if out.page_count >= pages:
                break
    return bytes(out.tobytes(garbage=1))


def slow_document(pages: int, levels: int = 5) -> bytes:
    """``pages`` pages, each drawing nested forms (4**levels draws of a little text): slow to read, far
    under the per-page clock."""
    from tests.jobs.hostile_pdfs import nested_xobjects

    out = pymupdf.open()
    with pymupdf.open("pdf", nested_xobjects(levels, text="slow page")) as one:
        for _ in range(pages):
            out.insert_pdf(one)
    return bytes(out.tobytes())


def held(pool: ParsePool, data: bytes, name: str, pages: int, config: IngestConfig,
         limit_s: float) -> tuple[float, list[float], TooComplex | None]:
    """Seconds one thread is held parsing ``data`` as the runner does (the plan's reading, then its batches,
    each call given what is left of ``limit_s``), the seconds of each batch, and the budget's error if hit."""
    spent, batches = 0.0, []
    requests = [ParseRequest("source", data, "pdf", name, config)] + [
        ParseRequest("pages", data, "pdf", name, config, doc_id="d", first=first, last=min(pages, first + BATCH - 1),
                     images=False) for first in range(1, pages + 1, BATCH)]
    for request in requests:
        t = time.perf_counter()
        try:
            pool.call(request, budget=DocumentBudget(limit_s, spent))
        except TooComplex as exc:
            return spent + time.perf_counter() - t, batches, exc
        spent += time.perf_counter() - t
        if request.task == "pages":
            batches.append(time.perf_counter() - t)
    return spent, batches, None


def document_budget(pages: int, slow_pages: int, slow_budget: float, rounds: int) -> None:
    print(machine_line(), flush=True)
    default = IngestConfig()
    config = default.model_copy(update={"parse_timeout_s": 600.0, "page_timeout_s": 600.0})
    pool = ParsePool(idle=1)
    try:
        pool.warm(1)
        filing = long_filing(pages)
        document_s, batches, error = held(pool, filing, "filing.pdf", pages, config, default.document_parse_timeout_s)
        assert error is None, error
        page_ms = interval([1000 * s / BATCH for s in batches[:-1]])
        print(f"{pages}-page filing: {document_s:.1f} s held, {page_ms.value:.1f} ms/page "
              f"[{page_ms.lo:.1f}, {page_ms.hi:.1f}]", flush=True)
        slow = slow_document(slow_pages)
        stops: list[str] = []

        def arm(limit_s: float) -> float:
            seconds, _, exc = held(pool, slow, "slow.pdf", slow_pages, config, limit_s)
            if exc is not None:
                stops.append(exc.message)
            return seconds

        times = alternate({"unbounded": lambda _: arm(UNBOUNDED), "budget": lambda _: arm(slow_budget)}, rounds)
    finally:
        pool.close()
    print(stops[-1] if stops else "the budget never stopped the slow document")
    print(machine_line())
    print(result_line({"document_s": document_s, "page_ms": page_ms,
                       "budget_share": document_s / default.document_parse_timeout_s,
                       "held_ratio": interval(paired_ratios(times["budget"], times["unbounded"])),
                       "held_over_budget": interval([t / slow_budget for t in times["budget"]]),
                       "unbounded_s": interval(times["unbounded"]), "stopped": len(stops)}))
