"""Content-derived ids: the same bytes give the same ids, and a page id survives the trip through its
Qdrant point id (what payload-free queries give back)."""

from __future__ import annotations

import uuid

from mmrag.ingest.ids import document_id, page_id, page_of_point, point_id


def test_ids_derive_from_content_and_a_page_id_round_trips_through_its_point_id():
    doc = document_id(b"%PDF-1.7 report")
    assert doc == document_id(b"%PDF-1.7 report") != document_id(b"%PDF-1.7 other")
    pages = [page_id(doc, n) for n in range(1, 50)]
    assert len(set(pages)) == 49 and all(len(p) == 32 for p in pages)
    for page in pages:
        point = point_id(page)
        assert str(uuid.UUID(point)) == point  # the canonical form both stores give back
        assert page_of_point(point) == page
