"""A real `mmrag serve` on 127.0.0.1 with keys required, two tenants' corpora and a tiny VLM: what the tests of
the OpenAI-compatible route and of the MCP server drive with their official clients.

``docs`` holds three one-page PDFs (the heron ledger's revenue by year, a zebra almanac that says "2021" a
lot, a filler), ``other`` one secret page. Keys: admin, read of ``docs``, read of ``other``. The corpora have
a CLIP space (the test fake ``fake:8``) so that a query image works. The VLM is a tiny random Qwen2.5-VL: its
text is noise, its token counts are real."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pymupdf

from mmrag.rest_client import Client
from tests.api.conftest import Server
from tests.fixtures.fake_embedders import BACKENDS_ENV
from tests.generate.tiny_vlm import save_tiny_qwen25vl

DOCS = {
    "heron.pdf": "Heron ledger annual report. The heron ledger revenue was 42 million euros in 2020 and "
                 "57 million euros in 2021. Revenue of the heron ledger grew.",
    "zebra.pdf": "Zebra almanac 2021. In 2021 the zebra almanac counted rainfall; 2021 was dry, and 2021 "
                 "ended cold. Zebra almanac of 2021.",
    "filler.pdf": "Minutes of the gardening club: tulips, roses and a new shed were discussed.",
}
SECRET = "Project nightjar: the launch code is 7781 and the budget is secret."


def pdf(text: str) -> bytes:
    doc = pymupdf.open()
    page = doc.new_page()
    page.insert_textbox(pymupdf.Rect(72, 72, 520, 760), text, fontsize=12)
    return bytes(doc.tobytes())


def vlm_env(folder: Path) -> dict[str, str]:
    model = save_tiny_qwen25vl(folder)
    return {"MMRAG_VLM__BACKEND": "transformers", "MMRAG_VLM__MODEL": str(model), "MMRAG_VLM__DEVICE": "cpu",
            "MMRAG_VLM__DTYPE": "float32", "MMRAG_VLM__MAX_PIXELS": str(64 * 28 * 28),
            "MMRAG_VLM__MAX_VISUAL_TOKENS_PER_IMAGE": "64", "MMRAG_VLM__VISUAL_TOKEN_BUDGET": "128",
            "MMRAG_VLM__TOKEN_BUDGET": "4096", "MMRAG_VLM__MAX_NEW_TOKENS": "8"}


def admin_key(data_dir: Path) -> str:
    """`mmrag keys create --admin` on the data folder: its last line of output is the key alone."""
    out = subprocess.run([sys.executable, "-m", "cli", "keys", "create", "--admin"],
                         env={**os.environ, "MMRAG_DATA_DIR": str(data_dir)},
                         capture_output=True, text=True, check=True, timeout=120)
    return out.stdout.strip().splitlines()[-1]


@dataclass
class Tenants:
    server: Server
    admin: str
    docs_key: str  # read key of docs
    other_key: str  # read key of other
    other_page: str  # the page id of other's secret page
    docs_pages: dict[str, str]  # file name -> its page id

    @property
    def url(self) -> str:
        return self.server.url


def start_tenants(tmp: Path) -> Tenants:
    data = tmp / "data"
    admin = admin_key(data)
    env = {**BACKENDS_ENV, **vlm_env(tmp / "tiny-vlm"), "MMRAG_API__AUTH": "required",
           "MMRAG_API__RATE_PER_KEY": "0", "MMRAG_EMBED__CLIP_MODEL": "fake:8"}
    server = Server(data, tmp / "server.log", env=env)
    try:
        with Client(server.url, api_key=admin) as client:
            client.create_corpus("docs")
            client.create_corpus("other")
            client.upload("docs", [(name, pdf(text)) for name, text in DOCS.items()], wait=True)
            client.upload("other", [("secret.pdf", pdf(SECRET))], wait=True)
            keys = {c: client.call("POST", "/keys", json={"scope": "read", "corpus": c})["key"]
                    for c in ("docs", "other")}
            pages = {d["filename"]: client.call("GET", f"/corpora/docs/documents/{d['id']}")["pages"][0]["id"]
                     for d in client.documents("docs")}
            secret = client.documents("other")[0]["id"]
            other_page = client.call("GET", f"/corpora/other/documents/{secret}")["pages"][0]["id"]
    except BaseException:
        server.stop()
        raise
    return Tenants(server, admin, keys["docs"], keys["other"], other_page, pages)
