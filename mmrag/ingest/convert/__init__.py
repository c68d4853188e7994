"""Non-PDF uploads to PDF bytes, as untrusted work in a limited subprocess.

Which converter converts which kind was chosen by measurement (``bench/convert.py``, numbers in
docs/ingest.md): ``mupdf`` (PyMuPDF's own readers and HTML layout, in
:mod:`mmrag.ingest.convert.worker`) or ``libreoffice`` (headless soffice,
:mod:`mmrag.ingest.convert.libreoffice`). Both run under :func:`sandbox.run_limited`.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import mmrag
from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument
from mmrag.ingest.convert.libreoffice import libreoffice_pdf
from mmrag.ingest.convert.sandbox import Limits, run_limited

CONVERTER: dict[str, str] = {
    **dict.fromkeys(["md", "txt", "csv", "tsv", "html", "epub", "eml"], "mupdf"),
    **dict.fromkeys(["docx", "docm", "pptx", "pptm", "xlsx", "xlsm", "doc", "ppt", "xls", "rtf", "odt", "odp",
                     "ods"], "libreoffice"),
}
"""kind -> converter (see bench/convert.py and docs/ingest.md for the measurements behind it)."""


def mupdf_pdf(data: bytes, kind: str, config: IngestConfig) -> bytes:
    """PDF bytes from the PyMuPDF worker subprocess."""
    with tempfile.TemporaryDirectory(prefix="mmrag-conv-") as tmp:
        root = Path(tmp)
        src, dst = root / f"input.{kind}", root / "output.pdf"
        src.write_bytes(data)
        project = str(Path(mmrag.__file__).resolve().parent.parent)
        limits = Limits(config.convert_timeout_s, config.convert_memory_bytes, f"converting the {kind} file")
        proc = run_limited([sys.executable, "-I", "-c", _WORKER, kind, str(src), str(dst)], limits, root,
                           env={"MMRAG_PROJECT": project})
        if proc.returncode != 0 or not dst.exists():
            tail = proc.stderr.decode(errors="replace").strip().splitlines()[-1:] or [""]
            raise CorruptDocument(f"the {kind} file could not be converted: {tail[0][-300:]}",
                                  detail={"reason": "conversion"})
        return dst.read_bytes()


# -I (isolated: no user site, no cwd on the path); the project root comes in through the environment
_WORKER = ("import os, sys; sys.path.insert(0, os.environ['MMRAG_PROJECT']); "
           "from mmrag.ingest.convert.worker import main; sys.exit(main(sys.argv[1:]))")


def convert_to_pdf(data: bytes, kind: str, config: IngestConfig, converter: str | None = None) -> bytes:
    """PDF bytes of a file of ``kind`` (a sniffed kind name) with its converter (or the one named)."""
    use = converter or CONVERTER[kind]
    if kind == "eml":  # the body (headers + text) as a page; attachments are documents of their own
        from mmrag.ingest.mail import email_body_html
        return mupdf_pdf(email_body_html(data).encode(), "html", config)
    return libreoffice_pdf(data, kind, config) if use == "libreoffice" else mupdf_pdf(data, kind, config)
