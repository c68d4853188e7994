"""Evaluation: suites, retrieval and answer metrics, runners, reports and comparisons.

Entry points: :func:`load_suite`, :func:`run_suite`, :func:`compare_runs`; the
metric functions in :mod:`.metrics` and :mod:`.answers` are pure.
"""

from mmrag.evaluate.compare import compare_runs
from mmrag.evaluate.report import REPORT_SCHEMA_VERSION, Report, load_report
from mmrag.evaluate.runner import ProgressEvent, run_suite
from mmrag.evaluate.suite import Suite, load_suite

__all__ = [
    "REPORT_SCHEMA_VERSION",
    "ProgressEvent",
    "Report",
    "Suite",
    "compare_runs",
    "load_report",
    "load_suite",
    "run_suite",
]
