"""Scale test of the document stage (issue 15): does ranking hold when look-alike and unrelated documents are added?

The single-document questions of the sec-10q suite whose judged report belongs to one group (by default
the quarter "2023 Q3": its five companies' reports) are asked through ``Pipeline.search`` over three
corpus sizes (:mod:`mmrag.evaluate.scale`):

* ``group``: the group's five reports alone (``document_ids`` restricted to them on every stage);
* ``suite``: the suite's twenty reports (``document_ids`` = the twenty: fifteen near-identical distractors);
* ``all``: no filter, the whole corpus: the twenty plus every document of the corpus that the suite's
  ``include`` does not match (distractors, e.g. the reportlab, ghostscript and R manuals). Only when the
  data folder has such documents.

Document level nDCG@5 (documents ranked by their best page among the suite's top_k pages), with the
document stage (spaces text, bm25, document) and with the page spaces only (text, bm25). The values are
``suite / group`` and ``all / group`` with 95 % bootstrap intervals over questions (paired: the same
questions in every size); target: >= 0.95 on the conservative bound. Quality is deterministic, so there
are no rounds: the interval is over questions.

Needs a data folder where the suite was ingested (read only: the bench only searches), e.g.::

    mmrag eval run eval/suites/sec-10q --data-dir /tmp/sec10q --no-plots
    mmrag --data-dir /tmp/sec10q ingest DISTRACTOR_PDFS -c eval-sec-10q     # optional: the 4x corpus
    python -m bench.doc_scale --data-dir /tmp/sec10q

Caveat: the smaller sizes filter the large corpus, so BM25 IDF is the whole collection's in every size.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bench._stats import machine_line, result_line, verdict
from bench._suite_data import open_search_pipeline, suite_data_args
from mmrag.evaluate.scale import corpus_sizes, group_questions, scale_test
from mmrag.evaluate.stats import Estimate
from mmrag.evaluate.suite import load_suite

TARGET = 0.95


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    suite_data_args(ap)
    ap.add_argument("--group", default="2023 Q3", help="file-name prefix of the small corpus's documents")
    ap.add_argument("--top-k", type=int, default=None, help="pages per search (default: the suite's top_k)")
    args = ap.parse_args()

    _, pipeline = open_search_pipeline(args.data_dir)
    try:
        suite = load_suite(args.suite)
        names = {p.name for p in suite.documents(Path("."))}
        documents = pipeline.catalog.documents.listed(suite.corpus_name, limit=1_000_000)
        group = {n for n in names if n.startswith(args.group)}
        questions = group_questions(suite, group)
        sizes = corpus_sizes(documents, group, names)
        pages = {size: sum(d.page_count for d in documents if ids is None or d.id in ids)
                 for size, ids in sizes.items()}
        print(f"{len(questions)} questions about {args.group!r}; corpus sizes (documents, pages): "
              + ", ".join(f"{s} ({len(ids) if ids is not None else len(documents)}, {pages[s]})"
                          for s, ids in sizes.items()))
        print(machine_line())
        result = scale_test(pipeline, suite, questions, sizes, top_k=args.top_k)
        values: dict[str, Estimate | float | int] = {"questions": len(questions)}
        for arm, by_size in result.scores.items():
            for size in by_size:
                values[f"{arm}_{size}_ndcg5"] = result.mean(arm, size)
        for (arm, size), r in result.ratios().items():
            est = Estimate(r.value, r.lo, r.hi, r.n)
            values[f"{arm}_{size}_ratio"] = est
            print(f"{arm}: {size}/{result.base} = {r.value:.3f} ({r.lo:.3f}-{r.hi:.3f}); "
                  + verdict(f"{arm}_{size}_ratio", est, TARGET, at_least=True))
        print(machine_line())
        print(result_line(values))
    finally:
        pipeline.close()


if __name__ == "__main__":
    main()
