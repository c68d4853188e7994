"""Corpora: create, list, get, delete."""

from __future__ import annotations

from fastapi import APIRouter, status

from api.deps import AdminDep, GateDep, PipelineDep, PrincipalDep, ReadDep
from api.errors import responses
from api.schemas import CorpusCreate, CorpusOut
from mmrag.catalog.corpora import CorpusRow

router = APIRouter(prefix="/corpora", tags=["corpora"])


def corpus_out(row: CorpusRow) -> CorpusOut:
    return CorpusOut(name=row.name, config=row.config, documents=row.documents, pages=row.pages,
                     created_at=row.created_at)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=CorpusOut,
             responses=responses(400, 409, 422, 503, 507))
def create_corpus(body: CorpusCreate, pipeline: PipelineDep, _: AdminDep) -> CorpusOut:
    """Create a corpus (admin keys). Spaces whose models cannot be loaded here are dropped (see /health);
    a space named twice counts once."""
    config = body.config
    if config is not None:
        config = config.model_copy(update={"spaces": list(dict.fromkeys(config.spaces))})
    pipeline.corpora.create_corpus(body.name, config)
    return corpus_out(pipeline.corpora.summary(body.name))


@router.get("", response_model=list[CorpusOut])
def list_corpora(pipeline: PipelineDep, principal: PrincipalDep) -> list[CorpusOut]:
    """The corpora this key may read (all of them for admin keys and open servers)."""
    return [corpus_out(row) for row in pipeline.corpora.listed() if principal.sees(row.name)]


@router.get("/{corpus}", response_model=CorpusOut, responses=responses(404))
def get_corpus(corpus: str, pipeline: PipelineDep, _: ReadDep) -> CorpusOut:
    return corpus_out(pipeline.corpora.summary(corpus))


@router.delete("/{corpus}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(404))
def delete_corpus(corpus: str, pipeline: PipelineDep, gate: GateDep, _: AdminDep) -> None:
    """Delete a corpus with its documents, pages and vectors (admin keys). Its write and read keys are
    revoked first: a corpus created later under the same name does not answer to them."""
    pipeline.corpora.config(corpus)  # 404 for an unknown corpus, before any key is touched
    gate.keys.revoke_corpus(corpus)
    pipeline.corpora.delete_corpus(corpus)
