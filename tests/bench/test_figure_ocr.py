"""bench/figure_ocr.py: it leaves whole-page OCR out of both arms, counts the pictures read, and ends with its
RESULT line (a tiny folder of two PDFs; the real run is over mmlongbench-dev)."""

from __future__ import annotations

import sys

import pymupdf
import pytest

from bench import figure_ocr
from mmrag.config import IngestConfig
from tests.ingest.test_figure_text import pdf_with_chart


def scanned_page() -> bytes:
    doc = pymupdf.open()
    page = doc.new_page(width=300, height=300)
    page.draw_rect(pymupdf.Rect(20, 20, 280, 280), color=(0, 0, 0))  # a mark, no text layer: OCRed whole
    page.insert_text((40, 100), "x")
    return doc.tobytes()


def test_pages_ocred_whole_are_left_out_and_the_pictures_counted(tmp_path, monkeypatch, capsys) -> None:
    (tmp_path / "chart.pdf").write_bytes(pdf_with_chart())
    (tmp_path / "scan.pdf").write_bytes(scanned_page())
    assert figure_ocr.layer_pages(scanned_page(), IngestConfig()) == ([], 1)
    monkeypatch.setattr(sys, "argv", ["figure_ocr", "--pdfs", str(tmp_path), "--rounds", "2", "--ingest-s", "100"])
    figure_ocr.main()
    result = capsys.readouterr().out.strip().splitlines()[-1]
    fields = dict(f.split("=", 1) for f in result.split()[1:])
    assert fields["layer_pages"] == "1" and fields["figure_pages"] == "1" and int(fields["words_added"]) >= 5
    assert float(fields["on_s"]) > float(fields["off_s"]) > 0, fields
    assert float(fields["ingest_ratio"]) == pytest.approx(1 + float(fields["extra_s"]) / 100, abs=2e-3)
