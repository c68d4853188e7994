"""``RemoteEmbedder``: the Embedder interface over HTTP, talking to ``mmrag embed-serve``.

Callers cannot tell it from an in-process embedder: same ``embed_batch(items, kind)``,
same attributes (read from the service's ``/health`` at construction), same errors
(the service's ``{"error": code}`` maps back to the mmrag error classes). Vectors travel in
the binary form of :mod:`mmrag.embed.wire`; images travel as lossless PNG, so results equal
the in-process ones up to batch-padding numerics.

Transient failures — connection errors, 429 and 503 — are retried with exponential backoff
(honouring ``Retry-After``) up to ``retries`` times; then the last error is raised.
"""

from __future__ import annotations

import io
import random
import time
from collections.abc import Sequence
from typing import Any

import httpx
import numpy as np
from PIL import Image

from mmrag.embed.base import Embedder, Item, Kind
from mmrag.embed.wire import decode_vectors
from mmrag.errors import MMRAGError, NotFound, Unavailable, error_for_code
from mmrag.types import Modality

_RETRY_STATUS = {429, 503}


def png_bytes(image: Image.Image) -> bytes:
    """Lossless, fast PNG of an image (RGB; what the service decodes back)."""
    buf = io.BytesIO()
    image.convert("RGB").save(buf, format="PNG", compress_level=1)
    return buf.getvalue()


def error_from_response(response: httpx.Response) -> MMRAGError:
    """The mmrag error a service error response stands for."""
    try:
        body = response.json()
        code, message = str(body["error"]), str(body["message"])
    except Exception:
        code = "unavailable"
        message = f"embedding service answered {response.status_code}: {response.text[:200]}"
    return error_for_code(code, message, fallback=Unavailable, retry_after=_retry_after(response))


def _retry_after(response: httpx.Response) -> float | None:
    try:
        return float(response.headers["Retry-After"])
    except (KeyError, ValueError):
        return None


class RemoteEmbedder(Embedder):
    """Lifecycle: construct with the service URL and a spec it serves (one ``GET /health``);
    call ``embed_batch`` from one thread at a time; ``close()`` when done."""

    def __init__(self, url: str, spec: str, *, timeout_s: float = 120.0, retries: int = 5,
                 backoff_s: float = 0.2, max_backoff_s: float = 10.0, dtype: str = "float32",
                 transport: httpx.BaseTransport | None = None) -> None:
        self.spec, self.url = spec, url.rstrip("/")
        self.retries, self.backoff_s, self.max_backoff_s = retries, backoff_s, max_backoff_s
        self.dtype = dtype
        self._http = httpx.Client(base_url=self.url, timeout=timeout_s, transport=transport)
        info = self._model_info()
        self.dim = int(info["dim"])
        self.multivector = bool(info["multivector"])
        self.modalities = frozenset(Modality(m) for m in info["modalities"])
        self.max_batch = int(info["max_batch"])
        self.precision = info.get("precision")  # what the service computes in (a service before the field: None)
        self.kernels = info.get("kernels")  # with which kernels, on the service's CPU (before the field: None)
        self.max_items = int(self._health.get("max_items_per_request", self.max_batch))

    def _model_info(self) -> dict[str, Any]:
        response = self._request("GET", "/health")
        if response.status_code not in (200, 503):
            raise error_from_response(response)
        self._health: dict[str, Any] = response.json()
        if self.spec in self._health.get("failed", {}):
            reason = self._health["failed"][self.spec]
            raise Unavailable(f"{self.spec} failed to load on {self.url}: {reason}")
        if self.spec not in self._health.get("models", {}):
            served = ", ".join(self._health.get("models", {})) or "none"
            raise NotFound(f"{self.url} does not serve {self.spec!r}; it serves: {served}")
        info: dict[str, Any] = self._health["models"][self.spec]
        return info

    def close(self) -> None:
        self._http.close()

    def _sleep_for(self, attempt: int, response: httpx.Response | None) -> float:
        hinted = _retry_after(response) if response is not None else None
        backoff = min(self.max_backoff_s, self.backoff_s * 2**attempt) * (0.5 + random.random() / 2)
        return min(self.max_backoff_s, hinted) if hinted is not None else backoff

    def _request(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One call with retries on connection errors, 429 and 503."""
        for attempt in range(self.retries + 1):
            try:
                response = self._http.request(method, path, **kwargs)
            except (httpx.ConnectError, httpx.RemoteProtocolError, httpx.ConnectTimeout) as exc:
                if attempt == self.retries:
                    raise Unavailable(f"embedding service {self.url} unreachable: {exc}") from exc
                time.sleep(self._sleep_for(attempt, None))
                continue
            except httpx.TimeoutException as exc:
                raise Unavailable(f"embedding service {self.url} timed out: {exc}") from exc
            if response.status_code not in _RETRY_STATUS or attempt == self.retries:
                return response
            time.sleep(self._sleep_for(attempt, response))
        raise AssertionError("unreachable")

    def _vectors(self, response: httpx.Response) -> list[np.ndarray]:
        if response.status_code != 200:
            raise error_from_response(response)
        return decode_vectors(response.content)

    def _embed_texts(self, texts: list[str], kind: Kind) -> list[np.ndarray]:
        body = {"model": self.spec, "input": texts, "kind": kind, "encoding_format": "binary",
                "dtype": self.dtype}
        return self._vectors(self._request("POST", "/v1/embeddings", json=body))

    def _embed_images(self, images: list[Image.Image], kind: Kind) -> list[np.ndarray]:
        files = [("image", (f"{i}.png", png_bytes(im), "image/png")) for i, im in enumerate(images)]
        data = {"model": self.spec, "kind": kind, "encoding_format": "binary", "dtype": self.dtype}
        return self._vectors(self._request("POST", "/v1/embeddings/images", data=data, files=files))

    def embed_batch(self, items: Sequence[Item], kind: Kind = "document") -> list[np.ndarray]:
        self.check_items(items)
        out: dict[int, np.ndarray] = {}
        text_idx = [i for i, it in enumerate(items) if isinstance(it, str)]
        image_idx = [i for i, it in enumerate(items) if not isinstance(it, str)]
        for start in range(0, len(text_idx), self.max_items):
            chunk = text_idx[start : start + self.max_items]
            out.update(zip(chunk, self._embed_texts([str(items[i]) for i in chunk], kind), strict=True))
        for start in range(0, len(image_idx), self.max_items):
            chunk = image_idx[start : start + self.max_items]
            images = [items[i] for i in chunk]
            out.update(zip(chunk, self._embed_images(images, kind), strict=True))  # type: ignore[arg-type]
        return [out[i] for i in range(len(items))]
