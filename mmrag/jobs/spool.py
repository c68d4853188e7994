"""The spool: uploaded bytes and stage outputs as files, so stages in other processes can read them.

Layout (a folder under the data folder, or a volume shared by the API and the workers)::

    blobs/<sha256>                          uploaded bytes, keyed by content hash
    jobs/<job>/<file>/manifest.json         a Manifest: corpus, filename, document id, blob, metadata, spaces
    jobs/<job>/<file>/b-1.source.npz        the plan stage's Source: the upload converted once to PDF (or the
                                            image), its kind and facts; parse batches render from it
    jobs/<job>/<file>/b<batch>.pages.npz    a ParsedBatch: pages of one batch (text, words; no images)
    jobs/<job>/<file>/b<batch>.images.npz   rendered PNGs of those pages
    jobs/<job>/<file>/b<batch>.points.npz   vectors of those pages, ready to upsert
    jobs/<job>/<file>/b<batch>.parse-s      seconds its parse call took (b-1: the plan's reading): the
                                            document's parse budget counts them
    jobs/<job>/cancelled                    marker: workers skip the job's remaining work

Every file is written to a temporary name and renamed, so a reader sees all of it or nothing,
and re-running a stage just overwrites its output (idempotent). Stage outputs are data, never
pickles (:mod:`mmrag.jobs.spool_codec`: JSON plus ``.npy`` arrays in one ``.npz``): reading one runs
no code, so whoever could write the spool still could not make a worker run anything. The spool
folder is 0700.
Lifecycle: stateless; one instance per process.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import uuid
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mmrag.ingest.ids import sha256_hex
from mmrag.jobs import spool_codec
from mmrag.jobs.model import Manifest, ParsedBatch
from mmrag.page_render import RenderSpec
from mmrag.sqlite_db import private_folder
from mmrag.types import Document

if TYPE_CHECKING:  # the ingestion stack (converters, pymupdf): not imported by a process that only searches
    from mmrag.ingest.source import Source

SOURCE_BATCH = -1  # spool slot of the file's Source (kind, converted PDF, facts), written by plan


class Spool:
    def __init__(self, root: Path) -> None:
        self.root = root
        private_folder(root)
        (root / "blobs").mkdir(parents=True, exist_ok=True)
        (root / "jobs").mkdir(parents=True, exist_ok=True)
        (root / "cancelled").mkdir(parents=True, exist_ok=True)

    @staticmethod
    def _atomic(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex[:8]}.tmp")
        try:
            tmp.write_bytes(data)
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk leaves no partial file behind to keep it full
            raise

    # uploads -------------------------------------------------------------------
    def put_blob(self, data: bytes) -> str:
        key = sha256_hex(data)
        path = self.root / "blobs" / key
        if not path.exists():
            self._atomic(path, data)
        return key

    def blob(self, key: str) -> bytes:
        return (self.root / "blobs" / key).read_bytes()

    def drop_blob(self, key: str) -> None:
        (self.root / "blobs" / key).unlink(missing_ok=True)

    # per file ------------------------------------------------------------------
    def file_dir(self, job_id: str, file: int) -> Path:
        return self.root / "jobs" / job_id / str(file)

    def put_manifest(self, job_id: str, file: int, manifest: Manifest) -> None:
        self._atomic(self.file_dir(job_id, file) / "manifest.json", json.dumps(manifest.to_dict()).encode())

    def manifest(self, job_id: str, file: int) -> Manifest:
        return Manifest.from_dict(json.loads((self.file_dir(job_id, file) / "manifest.json").read_text()))

    def parsed(self, job_id: str, file: int, batch: int) -> ParsedBatch:
        """The ``pages`` output of a batch's parse stage."""
        value = self.get(job_id, file, batch, "pages")
        return value if isinstance(value, ParsedBatch) else ParsedBatch(**value)  # a dict: spooled before ParsedBatch

    def put_source(self, job_id: str, file: int, source: Source) -> None:
        """The plan stage's reading of the file (its kind, converted PDF, facts), for the later stages."""
        self.put(job_id, file, SOURCE_BATCH, "source", source)

    def source(self, job_id: str, file: int) -> Source:
        value: Source = self.get(job_id, file, SOURCE_BATCH, "source")
        return value

    def kept_source(self, job_id: str, file: int) -> tuple[bytes | None, RenderSpec | None]:
        """The PDF a file's pages render from (the upload or its conversion) and how, for the page store;
        (None, None) for images."""
        source = self.source(job_id, file)
        if source.render is None:
            return None, None
        return source.pdf or self.blob(self.manifest(job_id, file).blob), source.render

    def batch_document(self, job_id: str, file: int, batch: int, *, with_images: bool) -> Document:
        """The document header from the manifest with one batch's pages (PNGs restored if asked)."""
        m = self.manifest(job_id, file)
        parsed = self.parsed(job_id, file, batch)
        pages = parsed.pages
        if with_images:
            images = self.get(job_id, file, batch, "images")
            pages = [replace(p, image_png=png) for p, png in zip(pages, images, strict=True)]
        return Document(id=m.document_id, filename=m.filename, media_type=parsed.media_type,
                        size_bytes=m.size_bytes, pages=pages, metadata=m.metadata)

    def _output(self, job_id: str, file: int, batch: int, kind: str) -> Path:
        return self.file_dir(job_id, file) / f"b{batch}.{kind}.npz"

    def put(self, job_id: str, file: int, batch: int, kind: str, value: Any) -> None:
        self.put_encoded(job_id, file, batch, kind, spool_codec.dumps(value))

    def put_encoded(self, job_id: str, file: int, batch: int, kind: str, data: bytes) -> None:
        """An output already encoded with :func:`spool_codec.dumps` (by a parse worker)."""
        self._atomic(self._output(job_id, file, batch, kind), data)

    def get(self, job_id: str, file: int, batch: int, kind: str) -> Any:
        return spool_codec.loads(self._output(job_id, file, batch, kind).read_bytes())

    def has(self, job_id: str, file: int, batch: int, kind: str) -> bool:
        return self._output(job_id, file, batch, kind).exists()

    def put_parse_seconds(self, job_id: str, file: int, batch: int, seconds: float) -> None:
        """What one parse call of the file took (a re-run of the batch overwrites it: counted once)."""
        self._atomic(self.file_dir(job_id, file) / f"b{batch}.parse-s", f"{seconds:.6f}".encode())

    def parse_seconds(self, job_id: str, file: int, but: int | None = None) -> float:
        """The file's parse calls so far, summed (without batch ``but``'s: the one about to run again)."""
        total = 0.0
        for path in self.file_dir(job_id, file).glob("b*.parse-s"):
            if path.name != f"b{but}.parse-s":
                with contextlib.suppress(OSError, ValueError):
                    total += float(path.read_text())
        return total

    def drop_file(self, job_id: str, file: int) -> None:
        shutil.rmtree(self.file_dir(job_id, file), ignore_errors=True)

    # jobs ----------------------------------------------------------------------
    def cancel(self, job_id: str) -> None:
        """Mark a job cancelled. The mark lives outside the job's folder: the writer drops that folder as
        soon as the job is finished, while a parse worker may still be drawing one of its pages (the
        call watching the mark must still see it then)."""
        self._atomic(self.root / "cancelled" / job_id, b"1")

    def cancelled(self, job_id: str) -> bool:
        return (self.root / "cancelled" / job_id).exists()

    def drop_job(self, job_id: str) -> None:
        shutil.rmtree(self.root / "jobs" / job_id, ignore_errors=True)
