"""One upload parsed into a :class:`Document` without a job: the upload checks and the job's own
``plan`` and ``parse`` stages over a throw-away spool (no catalog, store or embedders), so the ingest
tests read what a job would index."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from mmrag.config import IngestConfig
from mmrag.ingest.ids import document_id
from mmrag.jobs import stages
from mmrag.jobs.model import Manifest, Planned, Work
from mmrag.jobs.parse_pool import ParsePool
from mmrag.jobs.spool import Spool
from mmrag.jobs.uploads import check_uploaded_file
from mmrag.types import Document

PARSER = ParsePool(idle=1)  # one warm parse worker for the session's tests (it ends with the test process)


def parse_document(data: bytes, filename: str, config: IngestConfig,
                   metadata: dict[str, Any] | None = None) -> Document:
    """Check, plan and parse one upload, every page rendered (as for a corpus with a pixel space);
    bad files raise the InvalidInput subclass a job would report."""
    name = filename or "upload"
    kind = check_uploaded_file(data, name, config.max_upload_bytes, config)
    with tempfile.TemporaryDirectory() as tmp:
        spool = Spool(Path(tmp))
        ctx = stages.StageContext(config, spool, batch_pages=config.max_pages, parser=PARSER)  # one batch: all
        spool.put_manifest("job", 0, Manifest("corpus", name, document_id(data), spool.put_blob(data), len(data),
                                              dict(metadata or {}), ["clip", "colpali"], None, kind.name))
        commit, *parses = stages.plan(ctx, Work("plan", "job", 0))
        assert isinstance(commit.info, Planned) and commit.info.batches == len(parses) == 1
        stages.parse(ctx, parses[0])
        return spool.batch_document("job", 0, parses[0].batch, with_images=True)
