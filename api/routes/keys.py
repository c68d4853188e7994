"""API keys over REST (admin keys only): create, list, revoke. A write or read key belongs to one corpus
and is revoked with it (``DELETE /corpora/{corpus}``)."""

from __future__ import annotations

from fastapi import APIRouter, status

from api.deps import AdminDep, GateDep
from api.errors import responses
from api.schemas import KeyCreate, KeyCreated, KeyOut
from mmrag.errors import Conflict
from mmrag.keys import ApiKey

router = APIRouter(prefix="/keys", tags=["keys"])


def key_out(key: ApiKey) -> KeyOut:
    return KeyOut(id=key.id, prefix=key.prefix, scope=key.scope, corpus=key.corpus, name=key.name,
                  created_at=key.created_at, revoked_at=key.revoked_at)


@router.post("", status_code=status.HTTP_201_CREATED, response_model=KeyCreated, responses=responses(422))
def create_key(body: KeyCreate, gate: GateDep, _: AdminDep) -> KeyCreated:
    """Create a key. Its secret is in this response only."""
    new = gate.keys.create(body.scope, body.corpus, body.name)
    return KeyCreated(**key_out(new.key).model_dump(), key=new.secret)


@router.get("", response_model=list[KeyOut])
def list_keys(gate: GateDep, _: AdminDep) -> list[KeyOut]:
    """Every key, revoked ones included (never their secrets)."""
    return [key_out(k) for k in gate.keys.list()]


@router.delete("/{key_id}", response_model=KeyOut, responses=responses(404, 409))
def revoke_key(key_id: str, gate: GateDep, principal: AdminDep) -> KeyOut:
    """Revoke a key: requests with it get 401 from now on. A key cannot revoke itself (409): that
    would lock its holder out; use another admin key or ``mmrag keys revoke`` on the server."""
    if principal.key is not None and principal.key.id == key_id:
        raise Conflict(f"key {key_id} cannot revoke itself; revoke it with another admin key")
    return key_out(gate.keys.revoke(key_id))
