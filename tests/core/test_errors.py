"""The one error-code <-> exception map (API bodies, the REST client, the embedding client, job files)."""

from __future__ import annotations

import httpx
import pytest

from mmrag import errors
from mmrag.errors import error_for_code
from mmrag.rest_client import raise_for


def all_error_classes() -> list[type[errors.MMRAGError]]:
    found, todo = [], [errors.MMRAGError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


@pytest.mark.parametrize("cls", all_error_classes(), ids=lambda c: c.code)
def test_every_code_maps_back_to_its_class(cls):
    exc = error_for_code(cls.code, "what was wrong", detail={"k": 1})
    assert type(exc) is cls and exc.message == "what was wrong" and exc.detail == {"k": 1}


def test_codes_are_unique_and_unknown_codes_fall_back():
    codes = [c.code for c in all_error_classes()]
    assert len(codes) == len(set(codes))
    assert type(error_for_code("no_such_code", "m", fallback=errors.Unavailable)) is errors.Unavailable
    busy = error_for_code("overloaded", "busy", retry_after=7.5)
    assert isinstance(busy, errors.Overloaded) and busy.retry_after == 7.5


@pytest.mark.parametrize("status,body,headers,cls", [
    (404, {"error": "not_found", "message": "unknown corpus 'x'"}, {}, errors.NotFound),
    (422, {"error": "corrupt_document", "message": "PDF is encrypted"}, {}, errors.CorruptDocument),
    (429, {"error": "overloaded", "message": "busy"}, {"Retry-After": "3"}, errors.Overloaded),
    (422, {"error": "invalid_request", "message": "top_k: too big"}, {}, errors.InvalidInput),
    (502, {"error": "weird", "message": "proxy"}, {}, errors.Unavailable),
])
def test_the_rest_client_raises_the_error_a_body_stands_for(status, body, headers, cls):
    with pytest.raises(cls) as info:
        raise_for(httpx.Response(status, json=body, headers=headers))
    assert info.value.message == body["message"]
    if cls is errors.Overloaded:
        assert info.value.retry_after == 3.0
    raise_for(httpx.Response(200, json={}))  # no error: nothing raised
