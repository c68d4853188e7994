"""The parse worker process: ``python -m mmrag.jobs.parse_worker MEMORY_MB [NICE]``.

Untrusted PDFs and images are opened, read and drawn here, never in the service: the plan stage's
reading of a document (:func:`mmrag.ingest.source.read_source`), the parse of a page batch
(:func:`mmrag.jobs.pages.parse_pages`) and the on-demand render of a stored page for the page store
(:func:`render_page`: the page image routes, the VLM's pages). The process limits its own address
space (RLIMIT_AS) and is killed by its parent (:class:`mmrag.jobs.parse_pool.ParsePool`) when a call
runs past its clock, the job is cancelled or the service stops; it dies with the thread that started it
(``PR_SET_PDEATHSIG``).

Wire format, both ways over stdin/stdout: frames of one tag byte, an 8-byte big-endian length and the
payload. In: ``Q`` + a :class:`ParseRequest` (:mod:`mmrag.jobs.spool_codec`). Out: ``P`` + a page number
as its work starts, then ``R`` + the result (spool codec: reading it runs no code; a page batch comes
as :class:`ParsedPages`, its spool files' bytes) or ``E`` + the error
as JSON (``code``, ``message``, ``detail``).
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import struct
import sys
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, BinaryIO, Literal

from mmrag.config import IngestConfig
from mmrag.errors import MMRAGError
from mmrag.jobs import spool_codec

if TYPE_CHECKING:
    from mmrag.ingest.page_context import SectionState

HEADER = struct.Struct(">cQ")
REQUEST, PAGE, RESULT, ERROR = b"Q", b"P", b"R", b"E"
_MEMORY_SIGNS = ("malloc", "calloc", "realloc", "out of memory", "cannot allocate", "bad_alloc", "failed to map")


@dataclass(frozen=True, slots=True)
class ParseRequest:
    """One call to a parse worker: the plan's reading of a document, or a page batch."""

    task: Literal["source", "pages", "render"]
    data: bytes  # the upload's bytes
    kind: str  # its kind name (mmrag.ingest.sniff.KINDS)
    filename: str
    config: IngestConfig
    converted: bytes | None = None  # source: the upload converted to PDF (None: a PDF or an image)
    doc_id: str = ""  # pages: the document's id
    first: int = 1  # pages: the batch's pages, 1-based, inclusive
    last: int = 1
    images: bool = True  # pages: render them (OCRed pages and images always are)
    media_type: str = ""  # pages: the upload's media type (its ParsedBatch's)
    carried: SectionState | None = None  # pages: where an earlier batch's section reading stopped
    path: str = ""  # render: the kept PDF (``data`` stays empty: the worker reads the file), page ``first``


@dataclass(frozen=True, slots=True)
class ParsedPages:
    """A page batch parsed by a worker, encoded for the spool here (the service writes the bytes as they are)."""

    pages: bytes  # spool_codec of the batch's ParsedBatch (pages without their PNGs)
    images: bytes  # spool_codec of the pages' PNGs (None where not rendered)
    timings: dict[str, float]  # parse steps summed over the pages (parse_text, parse_tables, ...)
    sections: bytes  # spool_codec of the SectionState after the batch's last page (or None): the next batch's start


def write_frame(out: BinaryIO, tag: bytes, payload: bytes) -> None:
    out.write(HEADER.pack(tag, len(payload)))
    out.write(payload)
    out.flush()


def read_frame(inp: BinaryIO) -> tuple[bytes, bytes] | None:
    """The next frame, or None at the end of the input (the parent has gone)."""
    head = inp.read(HEADER.size)
    if len(head) < HEADER.size:
        return None
    tag, size = HEADER.unpack(head)
    payload = inp.read(size)
    return (tag, payload) if len(payload) == size else None


def run_request(request: ParseRequest, on_page: Any) -> Any:
    """What the request asks, in this process."""
    from mmrag.ingest.sniff import KINDS
    from mmrag.ingest.source import read_source
    from mmrag.jobs.model import ParsedBatch
    from mmrag.jobs.pages import parse_pages, split_images, stage_timings

    if request.task == "render":
        return render_page(request, on_page)
    if request.task == "source":
        return read_source(request.data, KINDS[request.kind], request.converted, request.filename, request.config)
    parsed = parse_pages(request.data, request.kind, request.doc_id, request.filename, request.config,
                         request.first, request.last, request.images, on_page, request.carried)
    meta, images = split_images(parsed.pages)
    return ParsedPages(spool_codec.dumps(ParsedBatch(request.media_type, meta)), spool_codec.dumps(images),
                       stage_timings(parsed.pages), spool_codec.dumps(parsed.sections))


def render_page(request: ParseRequest, on_page: Any) -> bytes:
    """PNG of page ``request.first`` of the PDF at ``request.path``, as ingestion rendered it (the config's dpi
    and pixel cap), its drawing cost checked first (:mod:`mmrag.ingest.pdf_budget`)."""
    import pymupdf

    from mmrag.imaging import encode_png
    from mmrag.ingest.pdf_budget import check_pages
    from mmrag.page_render import render_image

    with pymupdf.open(request.path) as doc:
        check_pages(doc, request.first, request.first, request.config)
        if on_page is not None:
            on_page(request.first)
        return encode_png(render_image(doc.load_page(request.first - 1), request.config.dpi,
                                       request.config.max_page_pixels))


def out_of_memory(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it: a page error wraps MuPDF's) is an allocation failure."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, MemoryError) or any(s in str(seen).lower() for s in _MEMORY_SIGNS):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def error_body(exc: BaseException, memory_mb: int) -> dict[str, Any]:
    if out_of_memory(exc):
        return {"code": "too_complex", "message": f"parsing needed more than the parse memory limit of "
                f"{memory_mb:,} MiB (MMRAG_INGEST__PARSE_MEMORY_MB)", "detail": {"limit": "parse_memory_mb"}}
    from mmrag.ingest.mupdf_errors import corrupt_document  # pymupdf: in the worker, not in its parent

    known = exc if isinstance(exc, MMRAGError) else corrupt_document(exc)  # MuPDF met damage: the file's fault
    if known is not None:
        return {"code": known.code, "message": known.message, "detail": known.detail}
    return {"code": "internal_error", "message": f"{type(exc).__name__}: {exc}", "detail": {}}


def serve(inp: BinaryIO, out: BinaryIO, memory_mb: int) -> None:
    """Answer requests until the input ends."""
    while (frame := read_frame(inp)) is not None:
        def on_page(number: int) -> None:
            write_frame(out, PAGE, str(number).encode())

        try:
            result = spool_codec.dumps(run_request(spool_codec.loads(frame[1]), on_page))
        except Exception as exc:
            write_frame(out, ERROR, json.dumps(error_body(exc, memory_mb), default=str).encode())
            continue
        write_frame(out, RESULT, result)


def _die_with_parent() -> None:
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG


def _warm_up() -> None:
    """Parse a one-page PDF before the memory limit is set: what every call imports is loaded then."""
    import pymupdf

    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "warm up")
    run_request(ParseRequest("source", doc.tobytes(), "pdf", "warm.pdf", IngestConfig(ocr=False)), None)
    run_request(ParseRequest("pages", doc.tobytes(), "pdf", "warm.pdf", IngestConfig(ocr=False), doc_id="w"), None)


def main() -> None:
    memory_mb = int(sys.argv[1])
    _die_with_parent()
    nice = int(sys.argv[2]) if len(sys.argv) > 2 else 0  # MMRAG_JOBS__PARSE_NICE: the embedder goes first
    if nice > os.getpriority(os.PRIO_PROCESS, 0):
        os.setpriority(os.PRIO_PROCESS, 0, nice)
    out = os.fdopen(os.dup(1), "wb")  # the protocol's; stray prints of libraries go to stderr
    os.dup2(2, 1)
    _warm_up()
    limit = memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    serve(sys.stdin.buffer, out, memory_mb)


if __name__ == "__main__":  # run from the module by its name, so its classes are mmrag's (the codec's rule)
    from mmrag.jobs.parse_worker import main as run

    run()
