"""Corpora: create, list, get, delete."""

from __future__ import annotations

from fastapi import APIRouter, status

from api.deps import AdminDep, ApplicationDep, GateDep, PrincipalDep, ReadDep
from api.errors import responses
from api.schemas import CorpusCreate, CorpusOut

router = APIRouter(prefix="/corpora", tags=["corpora"])


@router.post("", status_code=status.HTTP_201_CREATED, response_model=CorpusOut,
             responses=responses(400, 409, 422, 503, 507))
def create_corpus(body: CorpusCreate, application: ApplicationDep, principal: AdminDep) -> CorpusOut:
    """Create a corpus (admin keys). Spaces whose models cannot be loaded here are dropped (see /health);
    a space named twice counts once."""
    config = None if body.config is None else body.config.model_dump()
    return CorpusOut.model_validate(application.as_principal(principal).create_corpus(body.name, config))


@router.get("", response_model=list[CorpusOut])
def list_corpora(application: ApplicationDep, principal: PrincipalDep) -> list[CorpusOut]:
    """The corpora this key may read (all of them for admin keys and open servers)."""
    return [CorpusOut.model_validate(c) for c in application.as_principal(principal).corpora()]


@router.get("/{corpus}", response_model=CorpusOut, responses=responses(404))
def get_corpus(corpus: str, application: ApplicationDep, principal: ReadDep) -> CorpusOut:
    return CorpusOut.model_validate(application.as_principal(principal).corpus(corpus))


@router.delete("/{corpus}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(404))
def delete_corpus(corpus: str, application: ApplicationDep, gate: GateDep, principal: AdminDep) -> None:
    """Delete a corpus with its documents, pages and vectors (admin keys). Its write and read keys are
    revoked first: a corpus created later under the same name does not answer to them."""
    mine = application.as_principal(principal)
    mine.corpus(corpus)  # 404 for an unknown corpus, before any key is touched
    gate.keys.revoke_corpus(corpus)
    mine.delete_corpus(corpus)
