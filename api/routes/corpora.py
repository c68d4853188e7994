"""Corpora: create, list, get, delete."""

from __future__ import annotations

from fastapi import APIRouter, status

from api.deps import PipelineDep
from api.errors import responses
from api.schemas import CorpusCreate, CorpusOut
from mmrag.errors import NotFound

router = APIRouter(prefix="/corpora", tags=["corpora"])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=CorpusOut,
             responses=responses(400, 409, 422, 503))
def create_corpus(body: CorpusCreate, pipeline: PipelineDep) -> CorpusOut:
    """Create a corpus. Spaces whose models cannot be loaded here are dropped (see /health)."""
    config = pipeline.create_corpus(body.name, body.config)
    return CorpusOut(name=body.name, config=config, documents=0, pages=0, created_at=0.0)


@router.get("", response_model=list[CorpusOut])
def list_corpora(pipeline: PipelineDep) -> list[CorpusOut]:
    return [CorpusOut(name=n, config=c, documents=d, pages=p, created_at=t)
            for n, c, t, d, p in pipeline.catalog.list_corpora()]


@router.get("/{corpus}", response_model=CorpusOut, responses=responses(404))
def get_corpus(corpus: str, pipeline: PipelineDep) -> CorpusOut:
    for n, c, t, d, p in pipeline.catalog.list_corpora():
        if n == corpus:
            return CorpusOut(name=n, config=c, documents=d, pages=p, created_at=t)
    raise NotFound(f"unknown corpus {corpus!r}")


@router.delete("/{corpus}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(404))
def delete_corpus(corpus: str, pipeline: PipelineDep) -> None:
    """Delete a corpus with its documents, pages and vectors."""
    pipeline.delete_corpus(corpus)
