"""The smallest new door, written against the application interface alone (``mmrag/application.py``): a page
retriever in the shape of a LangChain retriever (``invoke(query) -> documents`` with ``page_content`` and
``metadata``). The same door runs over the in-process application and over a real ``mmrag serve`` (uvicorn on
127.0.0.1, stopped by PID) through the REST one, and finds the same pages."""

from __future__ import annotations

import ast
import inspect
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from mmrag.application import AnswerRequest, Application
from mmrag.errors import NotFound
from mmrag.generate.answer_events import final_event
from mmrag.local_application import LocalApplication
from mmrag.pipeline import build_pipeline
from mmrag.remote_application import RemoteApplication
from mmrag.rest_client import Client
from mmrag.types import SearchRequest
from tests.api.conftest import Server
from tests.conftest import make_settings


# --- the door ------------------------------------------------------------------------------------------------
@dataclass
class Page:
    """LangChain's ``Document`` shape."""

    page_content: str
    metadata: dict[str, Any] = field(default_factory=dict)


class PageRetriever:
    """LangChain's retriever shape over one corpus of an application."""

    def __init__(self, application: Application, corpus: str, k: int = 4) -> None:
        self.application, self.corpus, self.k = application, corpus, k

    def invoke(self, query: str) -> list[Page]:
        found = self.application.search(self.corpus, SearchRequest(query=query, top_k=self.k))
        return [Page(e.snippet, {"document": e.filename, "page": e.page, "page_id": e.page_id, "score": e.score})
                for e in found.evidence]
# --- end of the door -----------------------------------------------------------------------------------------


def door_lines() -> int:
    """Lines of code of the door (its two classes, without docstrings and blank lines)."""
    count = 0
    for cls in (Page, PageRetriever):
        source = inspect.getsource(cls)
        docs = {n.lineno for n in ast.walk(ast.parse(source)) if isinstance(n, ast.Expr)
                and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str)}
        count += sum(1 for i, line in enumerate(source.splitlines(), 1) if line.strip() and i not in docs)
    return count


def write_pdfs(folder: Path) -> list[Path]:
    texts = {"heron.pdf": ["heron ledger revenue grew in 2020", "a page about nothing much"],
             "kestrel.pdf": ["kestrel flight feathers and wings"]}
    paths = []
    for name, pages in texts.items():
        doc = pymupdf.open()
        for text in pages:
            doc.new_page().insert_text((72, 72), text)
        doc.save(folder / name)
        paths.append(folder / name)
    return paths


def test_the_door_imports_only_the_interface_and_the_vocabulary() -> None:
    tree = ast.parse(inspect.getsource(PageRetriever) + inspect.getsource(Page))
    names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
    assert names & {"LocalApplication", "RemoteApplication", "Pipeline", "Client"} == set()
    assert door_lines() <= 20, door_lines()  # the note reports the measured count


@pytest.mark.integration
def test_the_door_finds_the_same_pages_in_process_and_over_rest(tmp_path: Path) -> None:
    files = write_pdfs(tmp_path)
    local = LocalApplication(build_pipeline(make_settings(tmp_path / "data")))
    try:
        local.prepare("birds", files, lambda *_: None, {"spaces": ["bm25"]})
        here = PageRetriever(local, "birds", k=2).invoke("heron ledger revenue")
        said_here = answered(local)
    finally:
        local.close()
    assert (here[0].metadata["document"], here[0].metadata["page"]) == ("heron.pdf", 1)
    assert "heron ledger" in here[0].page_content

    server = Server(tmp_path / "data", tmp_path / "server.log")  # the same data folder, now owned by a server
    remote = RemoteApplication(Client(server.url))
    try:
        there = PageRetriever(remote, "birds", k=2).invoke("heron ledger revenue")
        said_there = answered(remote)
    finally:
        remote.close()
        server.stop()
    assert [(p.page_content, p.metadata) for p in there] == [(p.page_content, p.metadata) for p in here]
    assert said_there == said_here and said_here[0][0] == "extractive" and said_here[1][0].filename == "heron.pdf"


def answered(application: Application) -> tuple[tuple[str, str], list[Any], str]:
    """An answer's final event through the interface, and the error an unknown corpus raises at the call
    (before any event is read)."""
    done = final_event(application.answer("birds", AnswerRequest("Did heron ledger revenue grow?", top_k=1)))
    with pytest.raises(NotFound) as missing:
        application.answer("no-such-corpus", AnswerRequest("anything"))
    return (done.mode, done.answer), list(done.citations), missing.value.code
