"""The checks of a search request, one per rule: bounds and options against the settings (whose hard bounds are
declared once in :mod:`mmrag.types`, as the REST types read them), spaces against the corpus, and an image
query refused before its image is decoded. Pure functions; :class:`mmrag.retrieve.search.Retriever` calls them
for every caller, in-process or over REST."""

from __future__ import annotations

from collections.abc import Mapping

from mmrag.config import CorpusConfig
from mmrag.errors import Conflict, InvalidInput
from mmrag.retrieve_config import RetrieveConfig
from mmrag.spaces.base import Space
from mmrag.store.base import check_field_name
from mmrag.types import FUSIONS, MAX_RRF_K, MAX_WEIGHT, SEARCH_KINDS, SearchRequest

KINDS = SEARCH_KINDS  # the REST type declares the same (api/schemas.py SearchOptions.kinds)


def checked_spaces(config: RetrieveConfig, registered: Mapping[str, Space], corpus_config: CorpusConfig,
                   request: SearchRequest) -> list[str]:
    """Check a request's bounds and options against the settings and the corpus; return the spaces to use."""
    if not request.query.strip() and request.image is None and request.image_page_id is None:
        raise InvalidInput("empty query: give a text query, an image, or both")
    if request.image is not None and request.image_page_id is not None:
        raise InvalidInput("give either an uploaded image or image_page_id, not both")
    if len(request.query) > config.max_query_chars:
        raise InvalidInput(f"query is {len(request.query)} characters; the limit is {config.max_query_chars}")
    if not 1 <= request.top_k <= config.max_top_k:
        raise InvalidInput(f"top_k must be between 1 and {config.max_top_k}, got {request.top_k}")
    check_filters(config, request)
    available = [s for s in corpus_config.spaces if s in registered]
    wanted = request.spaces if request.spaces is not None else available
    unknown = [s for s in wanted if s not in available]
    if unknown or not wanted:  # the request is well formed; this corpus lacks what it names (409)
        raise Conflict(f"spaces {unknown or wanted} not available for this corpus; it has: {available}",
                       detail={"reason": "space_not_in_corpus", "available": available})
    for name, weight in (request.weights or {}).items():
        if name not in available:
            raise Conflict(f"weight given for space {name!r}, which this corpus does not have; it has: "
                           f"{available}", detail={"reason": "space_not_in_corpus", "available": available})
        if name not in wanted:
            raise InvalidInput(f"weight given for space {name!r}, which the request does not use ({wanted})")
        if not 0 <= weight <= MAX_WEIGHT:
            raise InvalidInput(f"weight of {name!r} must be between 0 and {MAX_WEIGHT}, got {weight}")
    return list(wanted)

def check_filters(config: RetrieveConfig, request: SearchRequest) -> None:
    """The filters and fusion options of a request."""
    limit = request.prefetch_limit
    if limit is not None and not request.top_k <= limit <= config.max_prefetch_limit:
        raise InvalidInput(f"prefetch_limit must be between top_k ({request.top_k}) and "
                           f"{config.max_prefetch_limit}, got {limit}")
    for key in request.metadata:
        check_field_name(key, "metadata filter key")
    if request.fusion is not None and request.fusion not in FUSIONS:
        raise InvalidInput(f"fusion must be one of {', '.join(FUSIONS)}, got {request.fusion!r}")
    if request.fusion == "dbsf" and any(w != 1.0 for w in (request.weights or {}).values()):
        raise InvalidInput("weights apply to fusion 'rrf' only (Qdrant's DBSF takes no weights)")
    if request.rrf_k is not None and not 1 <= request.rrf_k <= MAX_RRF_K:
        raise InvalidInput(f"rrf_k must be between 1 and {MAX_RRF_K}, got {request.rrf_k}")
    if request.pages is not None:
        first, last = request.pages
        if not 1 <= first <= last:
            raise InvalidInput(f"pages must be a range first..last with 1 <= first <= last, got {first}..{last}")
    bad = [k for k in request.kinds or [] if k not in KINDS]
    if bad or request.kinds == []:
        raise InvalidInput(f"kinds {bad or request.kinds} not allowed; allowed: {list(KINDS)}")

def check_image_query(registered: Mapping[str, Space], corpus_config: CorpusConfig,
                      spaces: list[str] | None) -> None:
    """Refuse an image query before its image is decoded unless a space of the request (default: the
    corpus's) takes image queries: Conflict when the corpus cannot answer it, InvalidInput when the request
    names no image space."""
    config = corpus_config
    corpus_takes = [n for n in config.spaces if n in registered and registered[n].takes_image_query]
    if not corpus_takes:  # a well-formed request this corpus cannot answer: 409
        raise Conflict(f"image queries need clip or colpali (an image space); this corpus has only "
                       f"{sorted(config.spaces)}: the image was not decoded", detail={"reason": "no_image_space"})
    missing = [n for n in spaces or [] if n not in config.spaces]
    if missing:
        raise Conflict(f"spaces {missing} not available for this corpus; it has: {config.spaces}",
                       detail={"reason": "space_not_in_corpus", "available": list(config.spaces)})
    if spaces and not set(spaces) & set(corpus_takes):
        raise InvalidInput(f"image queries need clip or colpali (an image space); the request uses only "
                           f"{sorted(set(spaces))} (this corpus's image spaces: {corpus_takes}): the image was "
                           "not decoded", detail={"reason": "no_image_space"})
