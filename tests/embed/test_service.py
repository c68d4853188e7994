"""The embedding service for real: uvicorn on 127.0.0.1, the tiny models, RemoteEmbedder."""

from __future__ import annotations

import base64
import io
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import numpy as np
import pytest
from PIL import Image

from api.embed_server import create_embed_app
from mmrag.embed.base import Embedder, EmbedderOptions, Item, Kind, register_embedder
from mmrag.embed.service_client import RemoteEmbedder, png_bytes
from mmrag.embed.wire import CONTENT_TYPE, decode_vectors
from mmrag.embed_service_config import BatchingConfig, InputLimits
from mmrag.errors import Unavailable
from mmrag.types import Modality
from tests.embed.conftest import ServerThread, free_port, random_image
from tests.embed.test_wire import png_claiming

pytestmark = pytest.mark.integration
MISSING = "hf:/no/such/model"


@pytest.fixture(scope="module")
def specs(clip_spec: str, multivector_specs: dict[str, str]) -> list[str]:
    return [clip_spec, multivector_specs["colqwen2"], multivector_specs["hf_colqwen2"],
            multivector_specs["hf_colpali"]]


@pytest.fixture(scope="module")
def url(specs: list[str], serve: Callable[[object], ServerThread]) -> str:
    app = create_embed_app([*specs, MISSING], EmbedderOptions(device="cpu"),
                           BatchingConfig(max_batch=8, max_wait_ms=100, queue_size=64),
                           InputLimits(max_items=16, max_text_chars=500, max_image_bytes=1_000_000,
                                       max_image_pixels=2_000_000))
    return serve(app).url


def test_health_lists_loaded_and_failed_models(url: str, specs: list[str]) -> None:
    body = httpx.get(f"{url}/health").json()
    assert body["status"] == "degraded" and set(body["models"]) == set(specs)
    assert body["models"][specs[0]] == {"dim": 32, "multivector": False, "max_batch": 8,
                                        "modalities": ["image", "text"], "precision": None, "kernels": None}
    assert body["models"][specs[1]]["multivector"] is True
    assert MISSING in body["failed"] and "cannot load" in body["failed"][MISSING]


@pytest.mark.parametrize("index", [0, 1, 2, 3])
def test_remote_results_equal_in_process(url: str, specs: list[str], index: int,
                                         load: Callable[[str], Embedder], images: list[Image.Image]) -> None:
    spec = specs[index]
    local, remote = load(spec), RemoteEmbedder(url, spec)
    attrs = ("dim", "multivector", "modalities")
    assert [getattr(remote, a) for a in attrs] == [getattr(local, a) for a in attrs]
    kind: Kind = "document"
    items: list[Item] = [images[0], "pipeline diagram", images[1], images[2], "revenue in 2023"]
    got, want = remote.embed_batch(items, kind), local.embed_batch(items, kind)
    assert [g.shape for g in got] == [w.shape for w in want]
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, atol=1e-4)
    half = RemoteEmbedder(url, spec, dtype="float16").embed(images[0])
    np.testing.assert_allclose(half, want[0], atol=2e-3)
    remote.close()


def test_openai_style_json_for_dense_vectors(url: str, clip_spec: str,
                                             load: Callable[[str], Embedder]) -> None:
    want = load(clip_spec).embed_batch(["a", "bb"])
    body = httpx.post(f"{url}/v1/embeddings", json={"model": clip_spec, "input": ["a", "bb"]}).json()
    assert body["object"] == "list" and [d["index"] for d in body["data"]] == [0, 1]
    np.testing.assert_allclose(body["data"][1]["embedding"], want[1], atol=1e-5)
    b64 = httpx.post(f"{url}/v1/embeddings", json={"model": clip_spec, "input": "a",
                                                   "encoding_format": "base64"}).json()
    vec = np.frombuffer(base64.b64decode(b64["data"][0]["embedding"]), dtype="<f4")
    np.testing.assert_allclose(vec, want[0], atol=1e-5)


def test_multivectors_come_back_binary(url: str, specs: list[str], images: list[Image.Image]) -> None:
    r = httpx.post(f"{url}/v1/embeddings", json={"model": specs[1], "input": ["q"]})
    assert r.headers["content-type"] == CONTENT_TYPE and decode_vectors(r.content)[0].ndim == 2
    payload = {"model": specs[1], "input": [base64.b64encode(png_bytes(images[2])).decode()]}
    r = httpx.post(f"{url}/v1/embeddings/images", json=payload)  # JSON + base64 variant
    assert r.status_code == 200 and decode_vectors(r.content)[0].shape[1] == 128
    as_floats = {"model": specs[1], "input": ["q"], "encoding_format": "float"}
    r = httpx.post(f"{url}/v1/embeddings", json=as_floats)
    assert r.status_code == 400 and "binary" in r.json()["message"]


def test_metrics(url: str, specs: list[str]) -> None:
    httpx.post(f"{url}/v1/embeddings", json={"model": specs[0], "input": ["warm"]})
    text = httpx.get(f"{url}/metrics").text
    assert f'mmrag_embed_queue_depth{{model="{specs[0]}"}} 0' in text
    assert f'mmrag_embed_batch_size_bucket{{model="{specs[0]}",le="+Inf"}}' in text
    snap = httpx.get(f"{url}/metrics", params={"format": "json"}).json()["models"][specs[0]]
    assert snap["items_total"] >= 1 and snap["batch_size_histogram"] and "items_per_s" in snap


def _image_post(url: str, spec: str, data: bytes, ctype: str = "image/png") -> httpx.Response:
    files = [("image", ("x", data, ctype))]
    return httpx.post(f"{url}/v1/embeddings/images", data={"model": spec}, files=files)


BAD_IMAGES = {
    "undecodable": (b"this is not an image", "image/png", 422, "corrupt_document"),
    "truncated": (png_bytes(random_image(40, 40, 9))[:80], "image/png", 422, "corrupt_document"),
    "zero_size": (png_claiming(0, 50), "image/png", None, None),
    "enormous": (png_claiming(50_000, 50_000), "image/png", 413, "too_large"),
    "too_many_pixels": (png_claiming(2000, 1500), "image/png", 413, "too_large"),
    "too_many_bytes": (b"\x89PNG" + b"\0" * 1_000_001, "image/png", 413, "too_large"),
    "wrong_part_type": (png_bytes(random_image(8, 8, 1)), "text/plain", 415, "unsupported_media_type"),
}


@pytest.mark.parametrize("case", sorted(BAD_IMAGES))
def test_bad_images_get_clear_4xx_and_service_stays_up(url: str, specs: list[str], case: str) -> None:
    data, ctype, status, code = BAD_IMAGES[case]
    r = _image_post(url, specs[1], data, ctype)
    body = r.json()
    if case == "zero_size":  # refused by our check or by Pillow's header parser
        assert r.status_code in (400, 422)
    else:
        assert (r.status_code, body["error"]) == (status, code)
    assert body["message"].startswith("image 0:") or case == "wrong_part_type"
    assert httpx.get(f"{url}/health").status_code == 200


BAD_REQUESTS = {
    "unknown_model": ({"model": "open_clip:nope/none", "input": ["x"]}, 404, "not_found"),
    "failed_model": ({"model": MISSING, "input": ["x"]}, 503, "unavailable"),
    "over_long_text": ({"model": "{clip}", "input": ["x" * 501]}, 413, "too_large"),
    "empty_text": ({"model": "{clip}", "input": [""]}, 400, "invalid_input"),
    "no_inputs": ({"model": "{clip}", "input": []}, 400, "invalid_input"),
    "too_many_inputs": ({"model": "{clip}", "input": ["x"] * 17}, 413, "too_large"),
    "not_a_string": ({"model": "{clip}", "input": [3]}, 400, "invalid_input"),
    "bad_kind": ({"model": "{clip}", "input": ["x"], "kind": "page"}, 400, "invalid_input"),
}


@pytest.mark.parametrize("case", sorted(BAD_REQUESTS))
def test_bad_text_requests(url: str, clip_spec: str, case: str) -> None:
    body, status, code = BAD_REQUESTS[case]
    body = {**body, "model": str(body["model"]).replace("{clip}", clip_spec)}
    r = httpx.post(f"{url}/v1/embeddings", json=body)
    assert (r.status_code, r.json()["error"]) == (status, code), r.text
    assert r.json()["message"]


def test_wrong_content_types(url: str, clip_spec: str) -> None:
    r = httpx.post(f"{url}/v1/embeddings/images", content=b"raw", headers={"content-type": "text/plain"})
    assert r.status_code == 415 and "multipart/form-data" in r.json()["message"]
    r = httpx.post(f"{url}/v1/embeddings", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_input"


def test_bad_item_does_not_fail_others_in_its_batch(url: str, specs: list[str],
                                                    load: Callable[[str], Embedder]) -> None:
    spec = specs[1]  # ColQwen2: a 1x250 image decodes but the processor refuses its aspect ratio
    good = [random_image(64, 250, s) for s in range(3)]
    bad = random_image(1, 250, 7)
    before = httpx.get(f"{url}/metrics", params={"format": "json"}).json()["models"][spec]
    with ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(_image_post, url, spec, png_bytes(im)) for im in [*good, bad]]
        responses = [f.result() for f in futures]
    want = load(spec).embed_batch(good)
    for r, w in zip(responses[:3], want, strict=True):
        assert r.status_code == 200
        np.testing.assert_allclose(decode_vectors(r.content)[0], w, atol=1e-4)
    assert responses[3].status_code == 400 and "could not embed" in responses[3].json()["message"]
    snap = httpx.get(f"{url}/metrics", params={"format": "json"}).json()["models"][spec]
    # refused while it was prepared (the processor's own check), so it never joined a batch
    assert snap["failed_items_total"] == before["failed_items_total"]
    assert snap["items_total"] == before["items_total"] + 3


class GatedEmbedder(Embedder):
    """A batch sets ``entered`` and then waits for ``gate``: events, not sleeps, order the test."""

    spec = "gated:4"
    modalities = frozenset({Modality.TEXT})
    multivector = False
    dim = 4

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.gate = threading.Event()

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        self.entered.set()
        assert self.gate.wait(30), "the test never opened the gate"
        return [np.full(4, len(str(it)), np.float32) for it in items]


class RefusalSignal(httpx.HTTPTransport):
    """The client's transport: sets ``refused`` when the service answers 429."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = threading.Event()

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = super().handle_request(request)
        if response.status_code == 429:
            self.refused.set()
        return response


def test_full_queue_answers_429_and_the_client_retries(serve: Callable[[object], ServerThread]) -> None:
    embedder = GatedEmbedder()
    register_embedder("gated", lambda name, options: embedder)
    server = serve(create_embed_app(["gated:4"], batching=BatchingConfig(max_batch=1, max_wait_ms=0,
                                                                         queue_size=2)))
    endpoint = f"{server.url}/v1/embeddings"
    try:
        with ThreadPoolExecutor(2) as pool:
            first = pool.submit(httpx.post, endpoint, json={"model": "gated:4", "input": ["a", "b"]})
            assert embedder.entered.wait(30)  # "a" computes (held at the gate); "b" is queued: 1 of 2
            r = httpx.post(endpoint, json={"model": "gated:4", "input": ["c", "d"]})
            assert r.status_code == 429 and r.json()["error"] == "overloaded"
            assert int(r.headers["Retry-After"]) >= 1
            transport = RefusalSignal()
            client = RemoteEmbedder(server.url, "gated:4", retries=20, backoff_s=0.05, max_backoff_s=0.2,
                                    transport=transport)
            retried = pool.submit(client.embed_batch, ["ccc", "dddd"])
            assert transport.refused.wait(30)  # the client was refused while the queue was full ...
            embedder.gate.set()  # ... and is answered once it has room
            assert [v[0] for v in retried.result(timeout=30)] == [3, 4]
            assert first.result().status_code == 200
    finally:
        embedder.gate.set()


def test_client_errors_when_service_unreachable_or_model_absent(url: str) -> None:
    with pytest.raises(Unavailable, match="unreachable"):
        RemoteEmbedder(f"http://127.0.0.1:{free_port()}", "x:1", retries=1, backoff_s=0.01)
    with pytest.raises(Unavailable, match="failed to load"):
        RemoteEmbedder(url, MISSING)
    from mmrag.errors import NotFound

    with pytest.raises(NotFound, match="serves"):
        RemoteEmbedder(url, "fake:8")


def test_png_bytes_roundtrip_is_lossless(tmp_path: Path) -> None:
    im = random_image(13, 7, 3)
    np.testing.assert_array_equal(np.asarray(Image.open(io.BytesIO(png_bytes(im)))), np.asarray(im))


def test_concurrent_requests_are_batched_together(url: str, clip_spec: str,
                                                  load: Callable[[str], Embedder]) -> None:
    def hist() -> dict[str, int]:
        snap = httpx.get(f"{url}/metrics", params={"format": "json"}).json()["models"][clip_spec]
        return dict(snap["batch_size_histogram"])

    before = hist()
    texts = [f"query number {i}" for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        bodies = list(pool.map(lambda t: httpx.post(f"{url}/v1/embeddings",
                                                    json={"model": clip_spec, "input": [t]}).json(), texts))
    new = {int(k): v - before.get(k, 0) for k, v in hist().items() if v != before.get(k, 0)}
    assert sum(k * v for k, v in new.items()) == 8 and max(new) > 1  # 8 single-item requests, shared batches
    want = load(clip_spec).embed_batch(texts)
    for body, w in zip(bodies, want, strict=True):
        np.testing.assert_allclose(body["data"][0]["embedding"], w, atol=1e-5)
