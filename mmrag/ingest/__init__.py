"""Ingest: an upload checked (:mod:`~mmrag.ingest.source`), converted to PDF when needed, its pages
rendered and read (:mod:`~mmrag.ingest.parse`); the job stages (:mod:`mmrag.jobs.stages`) run these."""
