"""The MCP server driven by the official ``mcp`` SDK's client: over streamable HTTP at ``/mcp`` of a live
`mmrag serve` (tests/api/tenants.py), and over stdio by spawning `mmrag mcp` (against that server with
``--url``, and in-process on a data folder). A read key of one corpus gets an MCP error, never data, for
another tenant's corpus through every tool and resource."""

from __future__ import annotations

import base64
import json
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.exceptions import MCPError

from mmrag.keys import KeyStore
from tests.api.tenants import DOCS, SECRET, Tenants, pdf

pytestmark = pytest.mark.integration
ROOT = Path(__file__).resolve().parents[2]  # `python -m cli` runs from the repository root
Connect = Callable[[], AbstractAsyncContextManager[ClientSession]]


@asynccontextmanager
async def over_http(url: str, key: str | None) -> AsyncIterator[ClientSession]:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with create_mcp_http_client(headers=headers) as http, \
            streamable_http_client(f"{url}/mcp", http_client=http) as (read, write), \
            ClientSession(read, write) as session:
        await session.initialize()
        yield session


@asynccontextmanager
async def over_stdio(args: list[str], env: dict[str, str]) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(command=sys.executable, args=["-m", "cli", "mcp", *args],
                                   env={**os.environ, "HF_HUB_OFFLINE": "1", **env}, cwd=str(ROOT))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def check_one_tenant(connect: Connect, own: str, pages: dict[str, str], other_page: str) -> None:
    """Every tool and resource answers for ``own`` (the docs corpus) and refuses the other corpus."""
    async with connect() as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"list_corpora", "search", "get_page", "answer"}
        assert all(t.annotations is not None and t.annotations.read_only_hint for t in tools.values())
        search_props = tools["search"].input_schema["properties"]
        assert {"corpus", "query", "top_k", "metadata", "pages", "document_ids", "spaces"} <= set(search_props)
        assert tools["answer"].input_schema["properties"]["question"]["maxLength"] == 4000
        listed = (await session.call_tool("list_corpora", {})).structured_content
        assert [c["name"] for c in listed["corpora"]] == [own]

        found = await session.call_tool("search", {"corpus": own, "query": "heron ledger revenue", "top_k": 3,
                                                   "pages": {"first": 1, "last": 1}})
        assert not found.is_error and found.structured_content["results"][0]["document"] == "heron.pdf"
        page = await session.call_tool("get_page", {"corpus": own, "page_id": pages["heron.pdf"]})
        assert not page.is_error and [c.type for c in page.content] == ["text", "image"]
        detail = json.loads(page.content[0].text)
        assert detail["filename"] == "heron.pdf" and detail["words"][0]["text"] == "Heron"
        assert len(detail["words"][0]["box"]) == 4 and page.content[1].mime_type == "image/png"
        assert base64.b64decode(page.content[1].data).startswith(b"\x89PNG")
        answer = await session.call_tool("answer", {"corpus": own, "question": "heron ledger revenue 2020"})
        assert not answer.is_error and answer.structured_content["citations"][0]["filename"] == "heron.pdf"
        templates = (await session.list_resource_templates()).resource_templates
        assert {t.uri_template for t in templates} == {"mmrag://corpora/{corpus}/pages/{page_id}",
                                                       "mmrag://corpora/{corpus}/pages/{page_id}/text"}
        image = await session.read_resource(f"mmrag://corpora/{own}/pages/{pages['heron.pdf']}")
        assert image.contents[0].mime_type == "image/png"
        assert base64.b64decode(image.contents[0].blob).startswith(b"\x89PNG")
        words = await session.read_resource(f"mmrag://corpora/{own}/pages/{pages['heron.pdf']}/text")
        assert json.loads(words.contents[0].text)["text"].startswith("Heron ledger")

        refusals = [await session.call_tool("search", {"corpus": "other", "query": "launch code nightjar"}),
                    await session.call_tool("answer", {"corpus": "other", "question": "What is the launch code?"}),
                    await session.call_tool("get_page", {"corpus": "other", "page_id": other_page}),
                    await session.call_tool("get_page", {"corpus": own, "page_id": other_page})]
        for refused in refusals:
            assert refused.is_error and "not_found" in text(refused), text(refused)
            assert "7781" not in str(refused) and "nightjar" not in str(refused).replace("launch code nightjar", "")
        for uri in (f"mmrag://corpora/other/pages/{other_page}", f"mmrag://corpora/other/pages/{other_page}/text"):
            with pytest.raises(Exception, match="not_found") as caught:
                await session.read_resource(uri)
            assert "7781" not in str(caught.value)


def test_mcp_over_http_with_the_sdk_client(tenants: Tenants) -> None:
    anyio.run(check_one_tenant, lambda: over_http(tenants.url, tenants.docs_key), "docs", tenants.docs_pages,
              tenants.other_page)


def test_mcp_over_http_needs_a_key(tenants: Tenants) -> None:
    """No key or an unknown one: 401 before the body is read; the SDK's client fails to initialise."""
    async def connect(key: str | None) -> None:
        async with over_http(tenants.url, key):
            pass

    def errors(exc: BaseException) -> list[BaseException]:  # the client's task groups wrap the transport's error
        return [exc, *(e for sub in getattr(exc, "exceptions", ()) for e in errors(sub))]

    hello = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}}
    for key in (None, "mmrag_nope_nope"):
        headers = {"Accept": "application/json, text/event-stream",
                   **({"Authorization": f"Bearer {key}"} if key else {})}
        r = httpx.post(f"{tenants.url}/mcp", json=hello, headers=headers, timeout=30)
        assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text
        with pytest.raises(BaseException) as refused:
            anyio.run(connect, key)
        assert any(isinstance(e, MCPError) for e in errors(refused.value)), repr(refused.value)
    r = httpx.post(f"{tenants.url}/mcp", json=hello, timeout=30, headers={
        "Accept": "application/json, text/event-stream", "Authorization": f"Bearer {tenants.docs_key}"})
    assert r.status_code == 200 and r.json()["result"]["serverInfo"]["name"] == "mmrag"


def test_mcp_over_stdio_against_the_server(tenants: Tenants, tmp_path: Path) -> None:
    """`mmrag mcp --url ... --key ...`: the tools over the server's REST API; the server checks the key."""
    env = {"MMRAG_DATA_DIR": str(tmp_path / "elsewhere")}
    connect = lambda: over_stdio(["--url", tenants.url, "--key", tenants.docs_key], env)  # noqa: E731
    anyio.run(check_one_tenant, connect, "docs", tenants.docs_pages, tenants.other_page)


@pytest.fixture()
def folder(settings, minilm) -> tuple[Path, str, dict[str, str], str]:
    """A data folder no server owns: docs and other ingested in-process, and a read key of docs."""
    from mmrag.pipeline import build_pipeline

    pipeline = build_pipeline(settings, embedders={"text": minilm})
    try:
        for corpus, files in (("docs", DOCS), ("other", {"secret.pdf": SECRET})):
            pipeline.corpora.create_corpus(corpus)
            for name, body in files.items():
                pipeline.ingest.file_bytes(corpus, pdf(body), name)
        pages = {}
        for corpus in ("docs", "other"):
            for doc in pipeline.catalog.documents.listed(corpus):
                pages[doc.filename] = pipeline.catalog.pages.of_document(corpus, doc.id)[0].id
    finally:
        pipeline.close()
    keys = KeyStore(settings.data_dir)
    key = keys.create("read", "docs").secret
    keys.close()
    return settings.data_dir, key, pages, pages["secret.pdf"]


def test_mcp_over_stdio_in_process(folder: tuple[Path, str, dict[str, str], str]) -> None:
    """`mmrag mcp --key ...` on a data folder: the pipeline in-process, the key checked against the folder's
    key store as the API checks it; without a key the folder's owner reads every corpus."""
    data, key, pages, other_page = folder
    env = {"MMRAG_DATA_DIR": str(data), "MMRAG_EMBED__CLIP_MODEL": "", "MMRAG_EMBED__COLPALI_MODEL": "",
           "MMRAG_VLM__BACKEND": "none"}
    anyio.run(check_one_tenant, lambda: over_stdio(["--key", key], env), "docs", pages, other_page)

    async def unkeyed() -> list[str]:
        async with over_stdio([], env) as session:
            listed = (await session.call_tool("list_corpora", {})).structured_content
            return sorted(c["name"] for c in listed["corpora"])

    assert anyio.run(unkeyed) == ["docs", "other"]
