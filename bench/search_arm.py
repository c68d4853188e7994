"""One arm of ``bench.search_arms``: search a data folder's corpus with the product's defaults and print every
search's milliseconds, as JSON.

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
        ms = []
        for q in spec["queries"]:
            t0 = time.perf_counter()
            pipeline.search(spec["corpus"], SearchRequest(query=q))
            ms.append((time.perf_counter() - t0) * 1000)
    finally:
        pipeline.close()
    print(json.dumps({"ms": ms}))


if __name__ == "__main__":
    main()
