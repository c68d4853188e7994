"""Ingest on real files: text layers, OCR of scans (rotated too), image formats, bad input."""

from __future__ import annotations

import io

import pymupdf
import pytest
from PIL import Image

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, InvalidInput, TooLarge, UnsupportedMediaType
from mmrag.ingest.parse import needs_ocr, parse_pdf_batch, unreadable
from mmrag.ingest.sniff import sniff_kind
from mmrag.types import TextSource, Word
from tests.conftest import CORPUS
from tests.ingest.helpers import parse_document

CFG = IngestConfig()


def test_pdf_text_layer_words_and_ids(corpus_dir):
    data = (corpus_dir / "pdf" / "normal_4pages.pdf").read_bytes()
    doc = parse_document(data, "normal_4pages.pdf", CFG)
    assert doc.media_type == "application/pdf" and len(doc.pages) == 4
    assert [p.number for p in doc.pages] == [1, 2, 3, 4]
    assert all(p.text_source is TextSource.LAYER for p in doc.pages)
    for p in doc.pages:
        assert p.words and all(0 <= v <= 1 for w in p.words for v in w.bbox)
        assert all(w.bbox[0] <= w.bbox[2] and w.bbox[1] <= w.bbox[3] for w in p.words)
        assert Image.open(io.BytesIO(p.image_png)).size == (p.width, p.height)
    # 144 dpi render of an A4/letter page
    assert 1000 < doc.pages[0].width * doc.pages[0].height / 1000 < 2500
    again = parse_document(data, "renamed.pdf", CFG)
    assert again.id == doc.id and [p.id for p in again.pages] == [p.id for p in doc.pages]
    assert len({p.id for p in doc.pages}) == 4


def test_render_respects_pixel_cap(corpus_dir):
    data = (corpus_dir / "pdf" / "2305.03393v1-pg9.pdf").read_bytes()
    doc = parse_document(data, "x.pdf", IngestConfig(dpi=600, max_page_pixels=500_000))
    assert doc.pages[0].width * doc.pages[0].height <= 500_000


@pytest.mark.parametrize("name", ["ocr_test.pdf", "ocr_test_rotated_180.pdf", "ocr_test_rotated_90.pdf"])
def test_scanned_pdf_is_ocred_upright(corpus_dir, name):
    doc = parse_document((corpus_dir / "scans" / name).read_bytes(), name, CFG)
    page = doc.pages[0]
    assert page.text_source is TextSource.OCR
    assert "Docling bundles PDF document conversion" in page.text
    assert page.height > page.width  # turned upright: portrait


def test_ocr_image_jpeg(corpus_dir):
    doc = parse_document((corpus_dir / "scans" / "qr_bill_example.jpg").read_bytes(), "bill.jpg", CFG)
    assert doc.media_type == "image/jpeg" and len(doc.pages) == 1
    assert "Rutschmann" in doc.pages[0].text


def _text_image(fmt: str, **save) -> bytes:
    from PIL import ImageDraw

    img = Image.new("RGB", (400, 120), "white")
    ImageDraw.Draw(img).text((10, 40), "HELLO OCR WORLD", fill="black")
    buf = io.BytesIO()
    img.save(buf, format=fmt, **save)
    return buf.getvalue()


@pytest.mark.parametrize("fmt,media", [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp"),
                                       ("TIFF", "image/tiff"), ("BMP", "image/bmp"), ("GIF", "image/gif")])
def test_image_formats_decode(fmt, media):
    data = _text_image(fmt)
    assert sniff_kind(data, f"x.{fmt.lower()}").media_type == media
    doc = parse_document(data, f"x.{fmt.lower()}", IngestConfig(ocr=False))
    assert doc.media_type == media and (doc.pages[0].width, doc.pages[0].height) == (400, 120)


def test_exif_orientation_applied():
    img = Image.new("RGB", (300, 100), "white")
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 CW on display
    buf = io.BytesIO()
    img.save(buf, format="JPEG", exif=exif)
    doc = parse_document(buf.getvalue(), "x.jpg", IngestConfig(ocr=False))
    assert (doc.pages[0].width, doc.pages[0].height) == (100, 300)


def test_gif_first_frame_and_rgba_to_rgb():
    frames = [Image.new("P", (50, 40), i) for i in range(3)]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:])
    doc = parse_document(buf.getvalue(), "a.gif", IngestConfig(ocr=False))
    assert (doc.pages[0].width, doc.pages[0].height) == (50, 40)
    rgba = io.BytesIO()
    Image.new("RGBA", (10, 10), (255, 0, 0, 0)).save(rgba, format="PNG")
    page = parse_document(rgba.getvalue(), "t.png", IngestConfig(ocr=False)).pages[0]
    assert Image.open(io.BytesIO(page.image_png)).mode == "RGB"


# bad input -------------------------------------------------------------------------------------------

def test_empty_file():
    with pytest.raises(InvalidInput, match="empty"):
        parse_document(b"", "a.pdf", CFG)


def test_text_with_image_extension():
    with pytest.raises(UnsupportedMediaType, match="allowed: application/pdf"):
        parse_document(b"hello, I am not a PNG at all" * 10, "photo.png", CFG)


def test_corrupt_pdf():
    with pytest.raises(CorruptDocument):
        parse_document(b"%PDF-1.7\n" + b"\x00garbage" * 200, "bad.pdf", CFG)


def test_truncated_pdf(corpus_dir):
    data = (corpus_dir / "pdf" / "multi_page.pdf").read_bytes()
    with pytest.raises(CorruptDocument):
        parse_document(data[: len(data) // 3], "cut.pdf", CFG)


def test_encrypted_pdf():
    doc = pymupdf.open()
    doc.new_page().insert_text((72, 72), "secret text")
    data = doc.tobytes(encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="pw")
    with pytest.raises(CorruptDocument, match="encrypted"):
        parse_document(data, "locked.pdf", CFG)


def test_pixel_bomb_rejected_before_decoding():
    buf = io.BytesIO()
    Image.new("1", (12_000, 12_000)).save(buf, format="PNG")  # 144 Mpx in a few KB
    assert len(buf.getvalue()) < 100_000
    with pytest.raises(TooLarge, match="pixels"):
        parse_document(buf.getvalue(), "bomb.png", CFG)


def test_oversize_and_page_limits(corpus_dir):
    data = (corpus_dir / "pdf" / "multi_page.pdf").read_bytes()
    with pytest.raises(TooLarge, match="limit"):
        parse_document(data, "m.pdf", IngestConfig(max_upload_bytes=1024))
    with pytest.raises(TooLarge, match="pages"):
        parse_document(data, "m.pdf", IngestConfig(max_pages=2))


def test_undecodable_image_bytes():
    data = _text_image("PNG")
    with pytest.raises(CorruptDocument, match="cannot be decoded"):
        parse_document(data[:200], "cut.png", CFG)


def test_a_blank_page_is_not_ocred_and_a_scan_still_is(corpus_dir):
    doc = pymupdf.open()
    doc.new_page()  # no text, no image, no drawing
    blank = parse_pdf_batch(doc.tobytes(), "d" * 32, CFG, images=False).pages[0]
    assert "ocr" not in blank.timings and blank.text == ""
    scan = parse_pdf_batch((corpus_dir / "scans" / "ocr_test_rotated_90.pdf").read_bytes(), "e" * 32, CFG).pages[0]
    assert "ocr" in scan.timings and scan.text.strip()


FILINGS = CORPUS.parent / "filings" / "pdf"


def test_a_text_layer_of_unmapped_glyphs_is_ocred() -> None:
    # The shared filings' McDonald's Q4 2022 release: its fonts map glyphs to control codes.
    path = FILINGS / "MCDONALDS_2022Q4_EARNINGS.pdf"
    assert path.exists(), f"missing shared filing {path}"
    page = pymupdf.open(path)[0]
    layer = [Word(w[4], (0.0, 0.0, 1.0, 1.0)) for w in page.get_text("words")]
    assert unreadable(layer, page.get_text)
    parsed = parse_pdf_batch(path.read_bytes(), "mcd", CFG, first=1, last=1, images=False).pages[0]
    assert parsed.text_source is TextSource.OCR and "mcdonald" in parsed.text.lower()


def test_readable_layers_are_kept_and_short_ones_need_marks() -> None:
    def words(*texts: str) -> list[Word]:
        return [Word(t, (0.0, 0.0, 1.0, 1.0)) for t in texts]

    asked: list[str] = []

    def ask(what: str, answer: bool | str):  # type: ignore[no-untyped-def]
        def called():  # type: ignore[no-untyped-def]
            asked.append(what)
            return answer
        return called

    statement = words("Consolidated", "Statement", "of", "Income", "Net", "sales", "$", "30,274", "(1,120)",
                      "—", "12.5%", "McDonald’s", "東京都", "....")
    assert not needs_ocr(statement, 16, ask("marks", True), ask("raw", "")) and not asked  # nothing read again
    glyphs = words("!\"#", "$", "&'(", ")'", "*+,(-", "'", "!\"#.#", "CA", "BDECFC")
    assert unreadable(glyphs, ask("raw", "\x00\x01\x02\x03\x04\x03\x05\x07!\"#$&'(CA"))
    assert not unreadable(glyphs, lambda: "....... ------ ||| 12 | 34")  # punctuation, but real characters
    assert needs_ocr(words("p.", "3"), 16, ask("marks", True), ask("raw", "")) and asked[-1] == "marks"
    assert not needs_ocr(words("p.", "3"), 16, lambda: False, lambda: "")  # a blank page with a page number
