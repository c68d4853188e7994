"""One arm of ``bench.search_arms``: search a data folder's corpus with the product's defaults and print every
search's milliseconds, wall-clock and CPU (every thread of the process: the embedded engine's included), as JSON.

Run as a script with ``PYTHONPATH`` naming the tree under test (this tree, or an export of another commit), so
the same measurement runs either code path. It uses only the API both have (``load_settings``,
``build_pipeline``, ``Pipeline.warm_up``, ``Pipeline.search``); nothing from ``bench/``.

    PYTHONPATH=TREE python bench/search_arm.py SPEC.json   # {"data_dir", "corpus", "queries", "warm"}
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path


def main() -> None:
    from mmrag.config import load_settings
    from mmrag.pipeline import build_pipeline
    from mmrag.types import SearchRequest

    spec = json.loads(Path(sys.argv[1]).read_text())
    settings = load_settings(data_dir=Path(spec["data_dir"]))
    settings.embed.clip_model = settings.embed.colpali_model = None
    pipeline = build_pipeline(settings, run_jobs=False)
    try:
        pipeline.warm_up()
        for q in spec["queries"][:spec["warm"]]:  # first searches: caches filled, as on a running server
            pipeline.search(spec["corpus"], SearchRequest(query=q))
        ms, cpu_ms = [], []
        for q in spec["queries"]:
            t0, c0 = time.perf_counter(), time.process_time()
            pipeline.search(spec["corpus"], SearchRequest(query=q))
            ms.append((time.perf_counter() - t0) * 1000)
            cpu_ms.append((time.process_time() - c0) * 1000)
    finally:
        pipeline.close()
    print(json.dumps({"ms": ms, "cpu_ms": cpu_ms}))


if __name__ == "__main__":
    main()
