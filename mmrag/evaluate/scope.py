"""A suite query's scope: the documents and the page range it is searched within, in the search request's own
terms (``SearchRequest.document_ids`` and ``SearchRequest.pages``; over REST ``document_ids`` and
``pages: {first, last}``, as ``mmrag search --document ID --pages 2-5``).

In a suite's queries file a scope reads ``"scope": {"documents": ["report.pdf"], "pages": {"first": 3,
"last": 9}}`` (either part optional). Documents are named by file name, as judgments are; the runner turns
each name into its document id, the content hash of the file's bytes (:func:`mmrag.ingest.ids.document_id`),
so the same request goes to the in-process pipeline and to a server. A scope that cannot hold a page (an
unknown document, a reversed or empty page range) is refused when the suite loads, naming the query.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mmrag.errors import InvalidInput
from mmrag.ingest.ids import document_id

SCOPE_KEYS = ("documents", "pages")
PAGE_KEYS = ("first", "last")


@dataclass(frozen=True, slots=True)
class QueryScope:
    """Where one query is searched (both parts narrow; an empty ``documents`` means every document)."""

    documents: tuple[str, ...] = ()  # file names (basenames) -> SearchRequest.document_ids
    pages: tuple[int, int] | None = None  # SearchRequest.pages: first..last, 1-based, inclusive


def parse_scope(raw: Any, qid: str) -> QueryScope:
    """A query's ``scope`` object, checked for shape: ``documents`` a non-empty list of file names, ``pages``
    ``{first, last}`` (``last`` defaults to ``first``) with ``1 <= first <= last``."""
    where = f"query {qid!r}: scope"
    if not isinstance(raw, Mapping) or not raw or set(raw) - set(SCOPE_KEYS):
        raise InvalidInput(f"{where} must be an object with documents and/or pages, got {raw!r}",
                           detail={"query": qid, "allowed": list(SCOPE_KEYS)})
    documents = raw.get("documents", [])
    if "documents" in raw and (not isinstance(documents, list) or not documents
                               or not all(isinstance(d, str) and d.strip() for d in documents)):
        raise InvalidInput(f"{where}.documents must be a non-empty list of file names, got {documents!r}",
                           detail={"query": qid})
    return QueryScope(tuple(Path(d).name for d in documents), _page_range(raw.get("pages"), where, qid))


def _page_range(raw: Any, where: str, qid: str) -> tuple[int, int] | None:
    if raw is None:
        return None
    if not isinstance(raw, Mapping) or "first" not in raw or set(raw) - set(PAGE_KEYS):
        raise InvalidInput(f"{where}.pages must be {{\"first\": N, \"last\": M}} (1-based, inclusive), got {raw!r}",
                           detail={"query": qid})
    first, last = raw["first"], raw.get("last", raw["first"])
    if not all(isinstance(n, int) and not isinstance(n, bool) for n in (first, last)) or first < 1:
        raise InvalidInput(f"{where}.pages needs whole page numbers from 1, got {raw!r}", detail={"query": qid})
    if last < first:
        raise InvalidInput(f"{where}.pages is reversed ({first}..{last}): it holds no page; write first <= last",
                           detail={"query": qid})
    return first, last


def check_scope(qid: str, scope: QueryScope, pages: Mapping[str, int]) -> None:
    """``scope`` names documents of the suite (``pages``: file name -> page count) and its range holds a page
    of one of them."""
    unknown = sorted(set(scope.documents) - set(pages))
    if unknown:
        raise InvalidInput(f"query {qid!r}: scope names documents {unknown[:5]} that are not in the suite",
                           detail={"query": qid, "unknown": unknown})
    if scope.pages:
        within = [pages[d] for d in scope.documents] if scope.documents else list(pages.values())
        if scope.pages[0] > max(within, default=0):
            raise InvalidInput(f"query {qid!r}: scope pages {scope.pages[0]}..{scope.pages[1]} hold no page: "
                               f"its documents have at most {max(within, default=0)} pages", detail={"query": qid})


def document_ids(files: Sequence[Path]) -> dict[str, str]:
    """File name -> document id (the content hash ingestion gives it), for the files a run ingests."""
    return {f.name: document_id(f.read_bytes()) for f in files}


def scope_filters(scope: QueryScope | None, ids: Mapping[str, str]) -> dict[str, Any]:
    """The :class:`~mmrag.types.SearchRequest` fields of a scope (``document_ids``, ``pages``); {} for none."""
    if scope is None:
        return {}
    return {"document_ids": [ids[name] for name in scope.documents] or None, "pages": scope.pages}
