"""Who is asking, and what they may touch: a :class:`Principal` is an API key's view of the corpora (or
nobody's, on an open server or in the data folder's own process: everything allowed).

Every door checks a corpus through it before the application reads or writes (:mod:`mmrag.application`):
another tenant's corpus is unknown (404), a key without the scope is refused (403).
"""

from __future__ import annotations

from dataclasses import dataclass

from mmrag.errors import Forbidden, NotFound
from mmrag.keys import ApiKey, Scope


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: a key, or nobody on an open server (everything allowed)."""

    key: ApiKey | None

    @property
    def id(self) -> str:
        return self.key.id if self.key is not None else "anonymous"

    def allows(self, scope: Scope, corpus: str | None = None) -> bool:
        return self.key is None or self.key.allows(scope, corpus)

    def sees(self, corpus: str) -> bool:
        return self.key is None or self.key.sees(corpus)

    def check(self, scope: Scope, corpus: str | None, missing: str) -> None:
        """Raise unless allowed: 404 (``missing``) for a corpus the key cannot see, else 403."""
        if self.allows(scope, corpus):
            return
        if corpus is not None and not self.sees(corpus):
            raise NotFound(missing)
        assert self.key is not None
        raise Forbidden(f"this key ({self.key.prefix}..., scope {self.key.scope}) does not allow this; "
                        f"it needs scope {scope}" + (f" on corpus {corpus!r}" if corpus else ""))


EVERYONE = Principal(None)  # no key: the data folder's owner (an open server, an in-process command)
