"""Ingestion jobs: uploads become jobs that run in page batches through parse -> embed -> write.

The stage code (:mod:`mmrag.jobs.stages`, :mod:`mmrag.jobs.writer`) is shared by the embedded
runner (:mod:`mmrag.jobs.runner`, worker threads, no broker) and the Celery shell (``indexer/``).
"""

from mmrag.jobs.model import FileState, FileStatus, JobState, JobStatus, Work

__all__ = ["FileState", "FileStatus", "JobState", "JobStatus", "Work"]
