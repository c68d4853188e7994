"""``python -m bench.retrieval_server DATA_DIR QUERIES_JSON PORT``: real uvicorn over the benchmark corpus."""

from __future__ import annotations

import sys
from pathlib import Path

import uvicorn

from api.app import create_app
from bench.retrieval_store import open_pipeline, read_queries, settings_for


def main() -> None:
    data_dir, queries, port = Path(sys.argv[1]), read_queries(Path(sys.argv[2])), int(sys.argv[3])
    pipeline = open_pipeline(data_dir, queries)
    try:
        uvicorn.run(create_app(settings_for(data_dir), pipeline), host="127.0.0.1", port=port, log_level="warning",
                    access_log=False)
    finally:
        pipeline.close()


if __name__ == "__main__":
    main()
