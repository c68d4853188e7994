"""Bad documents of every kind: each refused with a 4xx-class error naming the limit, or made harmless."""

from __future__ import annotations

import io
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from msoffcrypto.format.ooxml import OOXMLFile

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, TooLarge
from mmrag.ingest.convert import convert_to_pdf
from mmrag.ingest.convert.libreoffice import libreoffice_pdf
from mmrag.ingest.convert.sandbox import Limits, job_folder, network_isolation, run_converter, run_limited
from mmrag.ingest.mail import email_attachments
from mmrag.ingest.source import inspect_upload, prepare_source
from mmrag.jobs.writer import Upload, with_attachments
from tests.ingest.office_fixtures import (
    docm_from_docx,
    email_with_attachments,
    huge_sheet_xlsx,
    many_entries_zip,
    odt_with_onload_macro,
    xml_bomb_docx,
    zip_bomb_docx,
)
from tests.ingest.test_formats import formats_file

CFG = IngestConfig()


def test_truncated_zip_container():
    docx = formats_file("docx/word_sample.docx")
    with pytest.raises(CorruptDocument, match="truncated"):
        inspect_upload(docx[: len(docx) // 2], "cut.docx", CFG)


def test_password_protected_office_file():
    out = io.BytesIO()
    OOXMLFile(io.BytesIO(formats_file("docx/lorem_ipsum.docx"))).encrypt("secret", out)
    with pytest.raises(CorruptDocument, match="password-protected") as err:
        inspect_upload(out.getvalue(), "locked.docx", CFG)
    assert err.value.detail["reason"] == "encrypted"


def test_zip_bomb_and_entry_count_and_total_size():
    with pytest.raises(TooLarge, match="MMRAG_INGEST__MAX_ZIP_RATIO"):
        inspect_upload(zip_bomb_docx(), "bomb.docx", CFG)
    with pytest.raises(TooLarge, match="MMRAG_INGEST__MAX_ZIP_ENTRIES"):
        inspect_upload(many_entries_zip(200), "many.docx", IngestConfig(max_zip_entries=100))
    with pytest.raises(TooLarge, match="MMRAG_INGEST__MAX_UNZIPPED_BYTES"):
        inspect_upload(formats_file("docx/word_sample.docx"), "w.docx", IngestConfig(max_unzipped_bytes=4096))


def test_xml_bomb_inside_a_docx():
    with pytest.raises(CorruptDocument, match="entity expansion") as err:
        inspect_upload(xml_bomb_docx(formats_file("docx/word_sample.docx")), "lol.docx", CFG)
    assert "word/document.xml" in err.value.message


def test_million_row_spreadsheet_and_csv():
    with pytest.raises(TooLarge, match=r"1,000,000 rows.*MMRAG_INGEST__MAX_SHEET_ROWS"):
        inspect_upload(huge_sheet_xlsx(1_000_000), "big.xlsx", CFG)
    csv = b"id,value\n" + b"".join(b"%d,x\n" % i for i in range(200_001))
    with pytest.raises(TooLarge, match="MMRAG_INGEST__MAX_SHEET_ROWS"):
        inspect_upload(csv, "big.csv", CFG)


def test_spreadsheet_rendered_pages_are_bounded():
    with pytest.raises(TooLarge, match=r"spreadsheet renders to more than 2 pages.*MMRAG_INGEST__MAX_PAGES"):
        prepare_source(formats_file("xlsx/xlsx_01.xlsx"), "x.xlsx", IngestConfig(max_pages=2))


def test_email_with_a_thousand_attachments_is_refused_and_a_few_become_documents():
    with pytest.raises(TooLarge, match=r"1,000 attachments.*MMRAG_INGEST__MAX_EMAIL_ATTACHMENTS"):
        inspect_upload(email_with_attachments(1000), "many.eml", CFG)
    few = email_with_attachments(2)
    assert [n for n, _ in email_attachments(few, "few.eml")] == ["few.eml/note0.txt", "few.eml/note1.txt"]
    uploads = with_attachments([Upload("few.eml", few, {"team": "x"})])
    assert [u.filename for u in uploads] == ["few.eml", "few.eml/note0.txt", "few.eml/note1.txt"]
    assert uploads[1].metadata == {"team": "x", "attachment_of": "few.eml"} and b"ZX0000" in uploads[1].data


def test_converter_that_hangs_is_killed_with_its_process_group(tmp_path):
    marker = tmp_path / "child.pid"
    script = (f"import os, subprocess, time; p = subprocess.Popen(['sleep', '300']); "
              f"open({str(marker)!r}, 'w').write(str(p.pid)); time.sleep(300)")
    t0 = time.monotonic()
    with pytest.raises(TooLarge, match="time limit of 1 s"):
        run_limited([sys.executable, "-c", script], Limits(1.0, 1 << 30, "converting the test file"), tmp_path)
    assert time.monotonic() - t0 < 30
    child = int(marker.read_text())
    time.sleep(0.2)
    assert not Path(f"/proc/{child}").exists() or "Z" in Path(f"/proc/{child}/stat").read_text().split()[2]
    with pytest.raises(TooLarge, match="MMRAG_INGEST__CONVERT_TIMEOUT_S"):  # a real converter, a tiny limit
        convert_to_pdf(formats_file("docx/word_sample.docx"), "docx", IngestConfig(convert_timeout_s=0.3))


def test_memory_limit_stops_a_converter(tmp_path):
    with pytest.raises(TooLarge, match=r"memory limit of 536,870,912 bytes.*CONVERT_MEMORY_BYTES"):
        run_limited([sys.executable, "-c", "b = bytearray(1 << 31)"], Limits(30, 512 << 20), tmp_path)


@pytest.mark.parametrize("isolation", ["jail", "network"])
def test_no_network_inside_the_sandbox(isolation):
    assert network_isolation(), "unshare -n should work here (root or user namespaces)"
    with job_folder(isolation) as folder:
        proc = run_converter(["/bin/cat", "/proc/net/dev"], Limits(10, 1 << 30), folder, isolation)
    interfaces = {line.split(":")[0].strip() for line in proc.stdout.decode().splitlines()[2:]}
    assert interfaces == {"lo"}


def test_macros_are_never_run(tmp_path):
    target = tmp_path / "macro-ran.txt"
    odt = odt_with_onload_macro(formats_file("odf/text_document_01.odt"), target)
    assert inspect_upload(odt, "macro.odt", CFG).name == "odt"
    pdf = libreoffice_pdf(odt, "odt", CFG)
    assert pdf.startswith(b"%PDF") and not target.exists()
    docm = docm_from_docx(formats_file("docx/word_sample.docx"))
    source = prepare_source(docm, "macro.docm", CFG)
    assert source.kind == "docm" and source.pages == 2 and source.media_type.endswith("macroEnabled.12")
    profile = (tmp_path / "p")
    from mmrag.ingest.convert.libreoffice import write_profile
    xcu = (write_profile(profile) / "user" / "registrymodifications.xcu").read_text()
    assert '"DisableMacrosExecution" oor:op="fuse"><value>true' in xcu
    assert '"MacroSecurityLevel" oor:op="fuse"><value>3' in xcu


def test_corrupt_office_file_is_reported_not_crashed():
    docx = formats_file("docx/word_sample.docx")
    from tests.ingest.office_fixtures import rezip
    broken = rezip(docx, {"word/document.xml": b"<w:document>this is not closed"})
    with pytest.raises(CorruptDocument, match=r"word/document.xml is not XML its converter would read"):
        prepare_source(broken, "broken.docx", CFG)  # refused by the checks now, before a converter runs
    with pytest.raises(CorruptDocument, match=r"could not be converted.*source file could not be loaded"):
        libreoffice_pdf(broken, "docx", CFG)  # and the converter reports it too


def test_isolated_worker_runs_without_the_callers_path(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run([sys.executable, "-c", "from mmrag.ingest.convert import mupdf_pdf; "
                           "from mmrag.config import IngestConfig; "
                           "print(mupdf_pdf(b'# Title\\n\\nhello', 'md', IngestConfig())[:5])"],
                          capture_output=True, cwd=tmp_path, env=env, timeout=120)
    assert b"%PDF-" in proc.stdout, proc.stderr.decode()[-500:]
