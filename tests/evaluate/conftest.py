"""Fakes for evaluation tests: a tiny PDF corpus, a suite over it, a keyword-matching pipeline."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pymupdf
import pytest

from mmrag.errors import NotFound
from mmrag.generate.answer_events import AnswerDone, AnswerEvent, Citation, TokenDelta
from mmrag.types import DocumentInfo, Evidence, EvidenceKind, SearchRequest, SearchResult

PAGES = {
    "alpha.pdf": ["typewriter patented in 1868 by Sholes", "word processor floppy disks Wang"],
    "beta.pdf": ["self locking nut spring vibration", "elastic stop nut fiber collar", "blank"],
    "gamma.pdf": ["data breach cost per record 145 dollars"],
}
QUERIES = {
    "q1": ("typewriter patent 1868", {"alpha.pdf#1": 2}),
    "q2": ("floppy disks word processor", {"alpha.pdf#2": 2, "alpha.pdf#1": 1}),
    "q3": ("fiber collar stop nut", {"beta.pdf#2": 2, "beta.pdf#1": 1}),
    "q4": ("breach cost per record", {"gamma.pdf#1": 2}),
    "q5": ("spring vibration nut", {"beta.pdf#1": 2}),
}


def write_pdf(path: Path, texts: list[str]) -> None:
    doc = pymupdf.open()
    for text in texts:
        doc.new_page().insert_text((72, 72), text)
    doc.save(path)


@pytest.fixture
def suite_dir(tmp_path: Path) -> Path:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for name, texts in PAGES.items():
        write_pdf(corpus / name, texts)
    folder = tmp_path / "suite"
    folder.mkdir()
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t, "tags": ["text"]}) + "\n" for q, (t, _) in QUERIES.items())
    )
    rows = [f"{q}\t{doc}\t{g}" for q, (_, rel) in QUERIES.items() for doc, g in rel.items()]
    (folder / "qrels.tsv").write_text("query-id\tcorpus-id\tscore\n" + "\n".join(rows) + "\n")
    qa = [
        {
            "id": "a1",
            "question": "When was the typewriter patented?",
            "answers": ["1868"],
            "evidence": [{"document": "alpha.pdf", "page": 1}],
        },
        {"id": "a2", "question": "Cost per record?", "answers": ["145 dollars"], "evidence": ["gamma.pdf#1"]},
    ]
    (folder / "qa.jsonl").write_text("".join(json.dumps(row) + "\n" for row in qa))
    (folder / "suite.yaml").write_text(
        f"name: tiny\ndataset:\n  corpus: {corpus}\n  qa: qa.jsonl\n"
        "pipeline:\n  spaces: [bm25]\n  top_k: 5\nmetrics:\n  k: [1, 3, 5]\n  primary: ndcg@3\n"
        "variants:\n  worse:\n    pipeline: {spaces: [worse]}\n"
    )
    return folder


class FakePipeline:
    """Keyword overlap over the text layer; space ``worse`` reverses the ranking."""

    def __init__(self) -> None:
        self.pages: dict[str, list[tuple[str, int, str]]] = {}
        self.ingested: list[str] = []
        self.corpora = self  # it makes its own corpora (ensure_corpus)
        self.answers = FakeAnswers()
        self.settings = SimpleNamespace(retrieve=SimpleNamespace(max_query_chars=2000))

    def ensure_corpus(self, name: str) -> None:
        self.pages.setdefault(name, [])

    def config(self, name: str) -> None:
        if name not in self.pages:
            raise NotFound(f"unknown corpus {name!r}")

    @property
    def ingest(self) -> FakePipeline:
        return self  # the blocking ingest is the fake itself (``files``)

    def files(self, corpus: str, paths: list[Path], metadata: dict[str, Any] | None = None,
              progress: Any = None) -> list[DocumentInfo]:
        out = []
        for path in paths:
            with pymupdf.open(path) as doc:
                texts = [page.get_text() for page in doc]
            self.pages[corpus] += [(path.name, i + 1, t.lower()) for i, t in enumerate(texts)]
            self.ingested.append(path.name)
            out.append(DocumentInfo(path.stem, corpus, path.name, "application/pdf", 1, len(texts), {}, time.time()))
        return out

    def search(self, corpus: str, request: SearchRequest) -> SearchResult:
        words = request.query.lower().split()
        scored = [
            (sum(w in text for w in words) + 1.0 / (1 + number), name, number)
            for name, number, text in self.pages[corpus]
        ]
        scored.sort(reverse=request.spaces != ["worse"])
        evidence = [
            Evidence(
                EvidenceKind.PAGE,
                corpus,
                name,
                name,
                f"{name}-{number}",
                number,
                score,
                scores={"bm25": score},
            )
            for score, name, number in scored[: request.top_k]
        ]
        return SearchResult(evidence, {"embed_query": 0.001, "query": 0.002, "total": 0.004})


class FakeAnswers:
    """The answer service's owner, faked: "typewriter" questions get the right answer, others a wrong one."""

    def enable(self) -> FakeAnswers:
        return self

    def answer_stream(self, corpus: str, question: str, top_k: int, *args: Any, **kwargs: Any) -> Iterator[AnswerEvent]:
        if "typewriter" in question:
            done = AnswerDone("done", "1868", "extractive", [Citation(1, "alpha", "alpha.pdf", 1, "alpha-1")],
                              {"total": 0.01})
        else:
            done = AnswerDone("done", "no idea", "extractive", [Citation(1, "beta", "beta.pdf", 1, "beta-1")],
                              {"total": 0.02})
        return iter([TokenDelta("token", done.answer), done])
