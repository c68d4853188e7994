"""BEIR corpora as ingestible files: each ``corpus.jsonl`` record becomes ``<_id>.pdf``.

The pipeline ingests files, so a BEIR text corpus is rendered once to small
PDFs (title + text, paginated by PyMuPDF's Story layout) under a work folder;
judgments stay at document level (the PDF's stem is the BEIR corpus id).
"""

from __future__ import annotations

import html
import json
import re
from pathlib import Path

from mmrag.errors import InvalidInput

_SAFE_ID = re.compile(r"^[A-Za-z0-9._-]+$")


def render_text_pdf(title: str, text: str, path: Path) -> None:
    """Write ``title`` and ``text`` as a paginated A4 PDF at ``path``."""
    import pymupdf

    body = f"<h3>{html.escape(title)}</h3>" if title else ""
    body += "".join(f"<p>{html.escape(para)}</p>" for para in text.split("\n") if para.strip())
    story = pymupdf.Story(html=body or "<p></p>")
    writer = pymupdf.DocumentWriter(str(path))
    rect = pymupdf.paper_rect("a4")
    where = pymupdf.Rect(rect.x0 + 50, rect.y0 + 50, rect.x1 - 50, rect.y1 - 50)
    more = True
    while more:
        device = writer.begin_page(rect)
        more, _ = story.place(where)
        story.draw(device)
        writer.end_page()
    writer.close()


def load_beir_corpus(beir_dir: Path, workdir: Path) -> list[Path]:
    """Render every record of ``beir_dir/corpus.jsonl`` to ``workdir/beir-corpus/<_id>.pdf`` (cached)."""
    source = beir_dir / "corpus.jsonl"
    if not source.is_file():
        raise InvalidInput(f"BEIR folder {beir_dir} has no corpus.jsonl")
    out = workdir / "beir-corpus"
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for line in source.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        row = json.loads(line)
        doc_id = str(row["_id"])
        if not _SAFE_ID.match(doc_id):
            raise InvalidInput(f"BEIR corpus id {doc_id!r} cannot be a file name; allowed: letters, digits, . _ -")
        path = out / f"{doc_id}.pdf"
        if not path.exists():
            render_text_pdf(str(row.get("title", "")), str(row.get("text", "")), path)
        files.append(path)
    return files
