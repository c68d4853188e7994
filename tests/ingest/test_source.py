"""The plan stage's view of an upload (:func:`mmrag.ingest.source.prepare_source`): the PDF its pages
render from is opened once, and a kind found by the upload checks is not sniffed or checked again."""

from __future__ import annotations

import pymupdf
import pytest

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument
from mmrag.ingest import source as source_module
from mmrag.ingest.sniff import KINDS
from mmrag.ingest.source import inspect_upload, prepare_source
from tests.jobs.helpers import encrypted_pdf, text_pdf


def test_plan_opens_the_pdf_once(monkeypatch):
    data = text_pdf("Quarterly Service Report", 3)
    opened = []
    real_open = pymupdf.open
    monkeypatch.setattr(pymupdf, "open", lambda *a, **kw: opened.append(a) or real_open(*a, **kw))
    source = prepare_source(data, "report.pdf", IngestConfig())
    assert len(opened) == 1
    assert (source.kind, source.pages, source.pdf) == ("pdf", 3, None)
    assert source.facts.page_count == 3 and source.facts.source_kind == "pdf" and source.facts.title


def test_a_checked_kind_is_not_sniffed_again(monkeypatch):
    data = text_pdf("checked", 1)
    kind = inspect_upload(data, "a.pdf", IngestConfig())
    sniffed = []
    real_sniff = source_module.sniff_kind
    monkeypatch.setattr(source_module, "sniff_kind", lambda *a: sniffed.append(a) or real_sniff(*a))
    assert prepare_source(data, "a.pdf", IngestConfig(), kind).kind == "pdf" and sniffed == []
    assert prepare_source(data, "a.pdf", IngestConfig()).kind == "pdf" and len(sniffed) == 1  # no kind: sniffed


def test_a_bad_pdf_fails_the_same_with_a_checked_kind():
    for checked in (None, KINDS["pdf"]):
        with pytest.raises(CorruptDocument, match="encrypted"):
            prepare_source(encrypted_pdf(), "locked.pdf", IngestConfig(), checked)
        with pytest.raises(CorruptDocument):
            prepare_source(text_pdf("cut", 4)[:300], "cut.pdf", IngestConfig(), checked)
