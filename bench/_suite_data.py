"""An ingested suite's data folder for the benchmarks that only search it (text spaces; no visual models)."""

from __future__ import annotations

import argparse
from pathlib import Path

from mmrag.config import Settings, load_settings
from mmrag.pipeline import Pipeline, build_pipeline


def suite_data_args(ap: argparse.ArgumentParser, suite: str = "eval/suites/sec-10q") -> None:
    """``--data-dir`` (required) and ``--suite``."""
    ap.add_argument("--data-dir", type=Path, required=True, help="data folder holding the ingested suite (read only)")
    ap.add_argument("--suite", default=suite)


def open_search_pipeline(data_dir: Path) -> tuple[Settings, Pipeline]:
    """The settings and a pipeline over ``data_dir`` that runs no jobs, without CLIP and ColPali."""
    settings = load_settings(data_dir=data_dir)
    settings.embed.clip_model = settings.embed.colpali_model = None
    return settings, build_pipeline(settings, run_jobs=False)
