"""The parse budget's price per page batch (issue 28): a batch of born-digital filing pages parsed in
this process (``parse_pages`` and the spool encoding of its output: the code path before issue 28)
against the same batch through a parse worker process (``ParsePool.call``: the request and the PDF over
a pipe, the spool files' bytes back, the clocks watched), ABBA-alternated over ``--rounds``; the worker
is warm (started once, as the runner keeps it).

Batches: ``MMRAG_JOBS__BATCH_PAGES`` (16) pages of two filings of ../shared/corpus/filings (a 10-K's
statements and its first pages, an earnings release), text layer + tables + sections, no renders (a text
corpus).

    python -m bench.parse_budget [--rounds 7]
    python -m bench.parse_budget --document-pages 2000 [--slow-pages 48 --slow-budget 3 --rounds 3]

The second form measures the **document's total parse budget** (issue 42,
``MMRAG_INGEST__DOCUMENT_PARSE_TIMEOUT_S``): a ``--document-pages`` filing (the 3M 10-Ks of
../shared/corpus/filings joined) parsed as one runner thread parses a file (the plan's reading, then
its batches, each call given what is left of the budget), ending ``RESULT document_s=..`` (seconds the
thread is held: what the default budget must cover), ``page_ms`` (median and interval over batches) and
``budget_share`` (of the default budget); then ``--slow-pages`` pages of nested forms (each slow to read,
far under the page clock) parsed with no total budget and with ``--slow-budget`` seconds,
ABBA-alternated, ending ``held_ratio`` (seconds held with the budget / without) and ``held_over_budget``
(seconds held with it / the budget: the overshoot is at most one call).

ends with ``RESULT worker_cost=.. worker_cost_lo=.. worker_cost_hi=..`` (worker seconds / in-process
seconds per round, summed over the batches; target ``worker_cost_hi <= 1.05``), ``codec_share`` (the
encoding and decoding the worker adds, request and pages, timed in this process: its seconds over the
in-process parse's, per round) and ``startup_s`` (one worker's start-up, paid once per process).

A worker runs in its own session: where the kernel groups scheduling by session (``autogroup``, on here)
and other sessions load the machine, it gets a share of its own and may beat the in-process parse;
``codec_share`` is the part of the price that does not depend on the scheduler.
"""

from __future__ import annotations

import argparse
import time

from bench._stats import alternate, machine_line, paired_result
from bench.ingest import FILINGS
from mmrag.evaluate.stats import interval

BATCHES = [("3M_2018_10K.pdf", 56, 71), ("SALESFORCE_2024Q1_EARNINGS.pdf", 1, 16),
           ("3M_2018_10K.pdf", 1, 16)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--document-pages", type=int, default=0, help="measure the document budget on a file this long")
    ap.add_argument("--slow-pages", type=int, default=48, help="pages of the slow document")
    ap.add_argument("--slow-budget", type=float, default=3.0, help="its total parse budget, seconds")
    args = ap.parse_args()
    if args.document_pages:
        from bench.parse_document_budget import document_budget

        document_budget(args.document_pages, args.slow_pages, args.slow_budget, args.rounds)
        return

    from mmrag.config import IngestConfig
    from mmrag.jobs import spool_codec
    from mmrag.jobs.model import ParsedBatch
    from mmrag.jobs.pages import parse_pages, split_images
    from mmrag.jobs.parse_pool import ParsePool
    from mmrag.jobs.parse_worker import ParsedPages, ParseRequest

    print(machine_line(), flush=True)
    config = IngestConfig()
    files = [((FILINGS / name).read_bytes(), name, first, last) for name, first, last in BATCHES]
    pool = ParsePool(idle=1)
    t0 = time.perf_counter()
    pool.warm(1)
    pool.call(ParseRequest("pages", files[0][0], "pdf", "warm.pdf", config, doc_id="w", first=1, last=1,
                           images=False))
    startup = time.perf_counter() - t0

    def in_process(_: int) -> float:
        t = time.perf_counter()
        for data, name, first, last in files:  # the parse stage before issue 28: parse, encode for the spool
            parsed = parse_pages(data, "pdf", "d", name, config, first, last, images=False)
            meta, images = split_images(parsed.pages)
            spool_codec.dumps(ParsedBatch("application/pdf", meta)), spool_codec.dumps(images)
            spool_codec.dumps(parsed.sections)
        seconds = time.perf_counter() - t
        codec.append(transfer() / seconds)
        return seconds

    codec: list[float] = []

    def transfer() -> float:
        """What the worker adds in encoding: the request both ways, the answer (spool files' bytes) both ways."""
        t = time.perf_counter()
        for data, name, first, last in files:
            request = ParseRequest("pages", data, "pdf", name, config, doc_id="d", first=first, last=last,
                                   images=False)
            spool_codec.loads(spool_codec.dumps(request))
            t1 = time.perf_counter()
            parsed = parse_pages(data, "pdf", "d", name, config, first, last, images=False)
            meta, images = split_images(parsed.pages)
            answer = ParsedPages(spool_codec.dumps(ParsedBatch("application/pdf", meta)), spool_codec.dumps(images), {},
                                 spool_codec.dumps(parsed.sections))
            t += time.perf_counter() - t1  # the parse and the spool encoding are not the worker's price
            spool_codec.loads(spool_codec.dumps(answer))
        return time.perf_counter() - t

    def worker(_: int) -> float:
        t = time.perf_counter()
        for data, name, first, last in files:
            pool.call(ParseRequest("pages", data, "pdf", name, config, doc_id="d", first=first, last=last,
                                   images=False))
        return time.perf_counter() - t

    try:
        in_process(0)  # imports and caches of this process
        times = alternate({"in_process": in_process, "worker": worker}, args.rounds)
    finally:
        pool.close()
    paired_result("worker_cost", "worker / in-process seconds per batch", times, "worker", "in_process", 1.05,
                  at_least=False, extra={"codec_share": interval(codec[1:]), "startup_s": round(startup, 2)})


if __name__ == "__main__":
    main()
