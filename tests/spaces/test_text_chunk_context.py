"""The dense text space embeds each chunk after the header lines its corpus asks for; chunks stay as they are."""

from __future__ import annotations

import numpy as np

from mmrag.config import CorpusConfig, IngestConfig
from mmrag.ingest.chunking import document_label
from mmrag.jobs.embedding import page_inputs
from mmrag.spaces.text import TextDenseSpace
from mmrag.types import Document, Page, TextSource, Word

FACTS = {"doc": {"title": "Apple Inc.", "entities": ["Apple Inc", "Foxconn Ltd"], "periods": ["2022-06-25"]}}


def _doc() -> Document:
    words = [Word(w, (0.1, 0.1, 0.2, 0.2)) for w in ["Total", "net", "sales", "rose", "in", "the", "quarter"]]
    page = Page(id="p" * 32, document_id="d" * 32, number=4, width=10, height=10, image_hash="h",
                text=" ".join(w.text for w in words), words=words, text_source=TextSource.LAYER,
                context=["Part I", "Item 2. Results"])
    return Document(id="d" * 32, filename="q3.pdf", media_type="application/pdf", size_bytes=1, pages=[page],
                    metadata=FACTS)


def test_document_label_is_title_entity_period_without_repeats():
    assert document_label(FACTS, "q3.pdf") == "Apple Inc. · June 25, 2022"
    assert document_label({}, "handbook.pdf") == "handbook.pdf"


def test_chunks_are_embedded_with_the_chosen_headers(minilm):
    base = TextDenseSpace(minilm)
    inputs = page_inputs(_doc(), [base], IngestConfig())
    chunk = inputs[0].chunks[0]
    assert inputs[0].context == "Part I > Item 2. Results" and inputs[0].label == "Apple Inc. · June 25, 2022"
    cases = {(): chunk.text, ("section",): f"Part I > Item 2. Results\n{chunk.text}",
             ("document", "section"): f"Apple Inc. · June 25, 2022\nPart I > Item 2. Results\n{chunk.text}"}
    for context, text in cases.items():
        space = base.for_corpus(CorpusConfig(chunk_context=list(context)))
        assert (space is base) == (context == ())
        got = space.page_vectors(inputs)[0]["text"]
        assert np.allclose(got[0], minilm.embed(text, "document"), atol=1e-5)
    assert chunk.text == "Total net sales rose in the quarter"  # snippets and highlights keep the chunk's words
