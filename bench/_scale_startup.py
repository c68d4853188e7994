"""Start-up to ready of bench/scale.py, in a fresh process: ``python -m bench._scale_startup DATA CORPUS T0 QUERIES``.

Does what ``mmrag serve`` does before it answers (settings from the environment, ``build_pipeline``, the
warm-up the API runs at start-up, ``Pipeline.warm_up``), then the first search, then every query of the JSON
list ``QUERIES`` once; prints one JSON line: seconds since ``T0`` (the parent's clock when it started this
process) to imports done, pipeline built, warmed up, the corpus's collection opened (its first use: the
warm-up opens none) and first answer; resident memory after the first answer and after the queries (GB), and
the peak; after the queries also the proportional set size (``pss_gb``: a page of a file the engine maps twice
counted once) by kind of mapping, and the store's files resident by part (``resident``, bytes).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import Any


def main() -> None:
    data_dir, corpus, t0, queries = Path(sys.argv[1]), sys.argv[2], float(sys.argv[3]), json.loads(sys.argv[4])
    from bench._scale_measure import memory_by_kind, peak_rss_gb, resident_by_part, rss_gb
    from mmrag.config import load_settings
    from mmrag.pipeline import build_pipeline
    from mmrag.types import SearchRequest

    out: dict[str, Any] = {"imports_s": time.time() - t0}
    settings = load_settings(data_dir=data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None  # not loadable here (the corpus lacks them)
    settings.vlm.backend = "none"
    pipeline = build_pipeline(settings)
    out["built_s"] = time.time() - t0
    pipeline.warm_up()
    out["warm_s"] = time.time() - t0
    pipeline.store.count(corpus)
    out["opened_s"] = time.time() - t0
    pipeline.search(corpus, SearchRequest(query=queries[0]))
    out["ready_s"] = time.time() - t0
    out["rss_first_gb"] = rss_gb()
    for q in queries:
        pipeline.search(corpus, SearchRequest(query=q))
    out["rss_gb"] = rss_gb()
    out["peak_rss_gb"] = peak_rss_gb()
    kinds = memory_by_kind()
    out.update(pss_gb=kinds["total"] / 1e9, pss_anonymous_gb=kinds["anonymous"] / 1e9,
               pss_files_gb=kinds["files"] / 1e9)
    out["resident"] = resident_by_part(data_dir / "qdrant-edge")
    pipeline.close()
    print(json.dumps(out))


if __name__ == "__main__":
    main()
