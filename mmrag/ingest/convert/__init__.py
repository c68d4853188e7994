"""Non-PDF uploads to PDF bytes, as untrusted work in the converter jail.

Which converter converts which kind was chosen by measurement (``bench/convert.py``, numbers in
docs/ingest.md): ``mupdf`` (PyMuPDF's own readers and HTML layout, in
:mod:`mmrag.ingest.convert.worker`) or ``libreoffice`` (headless soffice,
:mod:`mmrag.ingest.convert.libreoffice`). Both run under :func:`sandbox.run_converter`, isolated as
``MMRAG_INGEST__CONVERT_ISOLATION`` says (docs/security.md).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pymupdf

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument
from mmrag.ingest.convert.libreoffice import libreoffice_pdf
from mmrag.ingest.convert.mail_page import email_body_html
from mmrag.ingest.convert.sandbox import Limits, job_folder, run_converter
from mmrag.ingest.convert.text_render import csv_page_width, render_html
from mmrag.ingest.convert.unlink import unlink_external
from mmrag.ingest.sniff import decode_text

CONVERTER: dict[str, str] = {
    **dict.fromkeys(["md", "txt", "csv", "tsv", "html", "epub", "eml"], "mupdf"),
    **dict.fromkeys(["docx", "docm", "pptx", "pptm", "xlsx", "xlsm", "doc", "ppt", "xls", "rtf", "odt", "odp",
                     "ods"], "libreoffice"),
}
"""kind -> converter (see bench/convert.py and docs/ingest.md for the measurements behind it)."""

OOXML_KINDS = frozenset({"docx", "docm", "pptx", "pptm", "xlsx", "xlsm"})
ODF_KINDS = frozenset({"odt", "odp", "ods"})
TEXT_KINDS = frozenset({"md", "txt", "csv", "tsv", "html"})
WORKER = Path(__file__).with_name("worker.py")
# -I -S: no user site, no site-packages, no cwd on the path; the only package it may import is PyMuPDF
_BOOT = ("import runpy, sys; sys.path.insert(0, sys.argv.pop(1)); sys.argv.pop(0); "
         "runpy.run_path(sys.argv[0], run_name='__main__')")


def worker_reads() -> tuple[str, list[Path]]:
    """(the Python executable, what the worker reads besides /usr): the Python install, the PyMuPDF
    package and the worker file itself."""
    python = Path(sys.executable).resolve()
    return str(python), [Path(sys.base_prefix).resolve(), Path(pymupdf.__file__).resolve().parent, WORKER]


def run_mupdf_worker(payload: bytes, kind: str, config: IngestConfig, width: float | None = None) -> bytes:
    """PDF bytes of ``payload`` (safe HTML, or an EPUB/DOCX/PPTX/XLSX) from the PyMuPDF worker."""
    python, reads = worker_reads()
    site = str(Path(pymupdf.__file__).resolve().parent.parent)
    with job_folder(config.convert_isolation, config.convert_dir) as folder:
        src = folder.put(f"input.{kind}", payload)
        out = folder.mkdir("out")
        argv = [python, "-I", "-S", "-c", _BOOT, site, str(WORKER), kind, str(src), str(out / "output.pdf")]
        limits = Limits(config.convert_timeout_s, config.convert_memory_bytes, f"converting the {kind} file")
        proc = run_converter(argv + ([f"{width:.1f}"] if width else []), limits, folder, config.convert_isolation,
                             reads=reads)
        pdf = folder.read("out/output.pdf")
        if proc.returncode != 0 or not pdf:
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise CorruptDocument(f"the {kind} file could not be converted: {tail[0][-300:]}",
                                  detail={"reason": "conversion"})
        return pdf


def mupdf_pdf(data: bytes, kind: str, config: IngestConfig) -> bytes:
    """PDF bytes from the PyMuPDF worker. Text kinds become safe HTML here first (no scripts, no
    remote or local references), so the worker lays out only what the service made."""
    if kind not in TEXT_KINDS:
        return run_mupdf_worker(data, kind, config)
    text = decode_text(data)
    width = csv_page_width(text, kind) if kind in ("csv", "tsv") else None
    return run_mupdf_worker(render_html(text, kind).encode(), "html", config, width)


def convert_to_pdf(data: bytes, kind: str, config: IngestConfig, converter: str | None = None) -> bytes:
    """PDF bytes of a file of ``kind`` (a sniffed kind name) with its converter (or the one named)."""
    use = converter or CONVERTER[kind]
    if kind == "eml":  # the body (headers + text) as a page; attachments are documents of their own
        return mupdf_pdf(email_body_html(data).encode(), "html", config)
    if kind in OOXML_KINDS or kind in ODF_KINDS:
        data = unlink_external(data)  # linked pictures and templates show as absent, never loaded
    return libreoffice_pdf(data, kind, config) if use == "libreoffice" else mupdf_pdf(data, kind, config)
