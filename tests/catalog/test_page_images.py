"""Storage that scales: the PDF kept once, pages re-rendered with the embedders' pixels, compact boxes."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from PIL import Image

from mmrag.catalog import Catalog
from mmrag.catalog.page_images import PageImageStore
from mmrag.catalog.word_boxes import PREFIX, code_boxes, decode_boxes, pack_words, unpack_words
from mmrag.config import IngestConfig
from mmrag.errors import NotFound
from mmrag.page_render import RenderSpec
from mmrag.types import TextSource, Word
from tests.ingest.helpers import parse_document

CFG = IngestConfig()


def _pixels(png: bytes) -> np.ndarray:
    return np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))


@pytest.fixture()
def catalog(tmp_path):
    c = Catalog(tmp_path / "data")
    yield c
    c.close()


def test_pages_render_on_demand_with_the_pixels_the_embedders_saw(catalog, corpus_dir, tmp_path):
    data = (corpus_dir / "pdf" / "normal_4pages.pdf").read_bytes()
    doc = parse_document(data, "normal_4pages.pdf", CFG)
    catalog.pages.save_images("c", doc.pages, data, RenderSpec(CFG.dpi, CFG.max_page_pixels))
    catalog.documents.add("c", doc)
    corpus = catalog.corpora.folder("c")
    assert not list((corpus / "pages").glob("*.png")), "text pages need no stored image"
    assert (corpus / "sources" / f"{doc.id}.pdf").read_bytes() == data
    for page in doc.pages:
        served = catalog.pages.image("c", page.id)
        # jobs/embedding.py decodes image_png for the visual spaces; the VLM and the API get page_image
        assert np.array_equal(_pixels(served), _pixels(page.image_png))
        assert served == page.image_png
    catalog.documents.delete("c", doc.id)
    assert not (corpus / "sources" / f"{doc.id}.pdf").exists()
    with pytest.raises(NotFound):
        catalog.pages.image("c", doc.pages[0].id)


def test_ocr_pages_and_images_keep_their_file(catalog, corpus_dir):
    data = (corpus_dir / "scans" / "ocr_test_rotated_90.pdf").read_bytes()
    doc = parse_document(data, "scan.pdf", CFG)
    assert doc.pages[0].text_source is TextSource.OCR
    catalog.pages.save_images("c", doc.pages, data, RenderSpec(CFG.dpi, CFG.max_page_pixels))
    catalog.documents.add("c", doc)
    assert catalog.pages.image("c", doc.pages[0].id) == doc.pages[0].image_png  # upright, as OCR turned it


def test_render_cache_is_bounded(tmp_path, corpus_dir):
    data = (corpus_dir / "pdf" / "normal_4pages.pdf").read_bytes()
    doc = parse_document(data, "n.pdf", CFG)
    store = PageImageStore(cache_bytes=len(doc.pages[0].image_png) + 10)
    store.save(tmp_path, doc.pages, data, RenderSpec(CFG.dpi, CFG.max_page_pixels))
    for p in doc.pages:
        assert store.image(tmp_path, p.id, doc.id, p.number) == p.image_png
    assert store._size <= store.cache_bytes and len(store._cache) == 1


def test_word_boxes_pack_to_a_tenth_and_round_trip():
    words = [Word(text=f"w{i}", bbox=(i / 100, 0.25, i / 100 + 0.01, 0.3)) for i in range(90)]
    text = " ".join(w.text for w in words)
    packed = pack_words(words, text)
    legacy = pack_words(words, text + " ")  # text that does not match: the JSON form
    b16 = PREFIX + base64.b64encode(np.rint(np.array([w.bbox for w in words]) * 65535).astype("<u2").tobytes()).decode()
    assert isinstance(packed, bytes) and isinstance(legacy, str) and legacy.startswith("[")
    assert len(packed) * 10 < len(legacy) and len(packed) * 3 < len(b16)
    for stored in (packed, legacy, b16):  # b16: the form written before, still read
        back = unpack_words(stored, text)
        assert [w.text for w in back] == [w.text for w in words]
        pairs = zip(words, back, strict=True)
        assert max(abs(a - b) for w, v in pairs for a, b in zip(w.bbox, v.bbox, strict=True)) < 1e-4
    assert [w.bbox for w in unpack_words(packed, text)] == [w.bbox for w in unpack_words(b16, text)]
    spaced = [Word(text="a b", bbox=(0, 0, 1, 1))]
    assert unpack_words(pack_words(spaced, "a b"), "a b")[0].text == "a b"
    assert unpack_words(pack_words([], ""), "") == []
    back = unpack_words(packed, text)  # read lazily: a slice makes only its words, equal to the list's
    assert len(back) == len(words) and back[1:3] == list(back)[1:3] and back[-1] == list(back)[-1]
    assert back == unpack_words(b16, text) and back != list(back)[:-1]


def test_box_codes_are_exact_for_any_boxes():
    rng = np.random.default_rng(7)
    boxes = rng.integers(0, 65536, size=(500, 4))  # unordered, edges crossing: every difference wraps somewhere
    boxes[:3] = [[0, 0, 0, 0], [65535, 65535, 65535, 65535], [65535, 0, 0, 65535]]
    assert (decode_boxes(code_boxes(boxes)) == boxes).all()
    assert code_boxes(boxes).min() >= 0 and code_boxes(boxes).max() < 65536
