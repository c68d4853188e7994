"""What a corpus's documents say about a query: the entities it names and, when it asks for the latest,
which documents are the newest of their series. Built from the catalog's document facts
(:mod:`mmrag.ingest.doc_evidence`) and cached per corpus until its documents change.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mmrag.catalog import Catalog
from mmrag.ingest.doc_evidence import latest_of_series
from mmrag.ingest.doc_facts import DocumentFacts

_LEGAL = re.compile(r"(?:[\s,]+(?:inc|incorporated|corp|corporation|co|company|ltd|limited|llc|llp|plc|gmbh|ag|"
                    r"s\.?a|n\.?v|s\.?p\.?a|pty|kk|group|holdings)\.?)+$")


def entity_core(name: str) -> str:
    """An organisation's name as people write it in a question: no legal form, no ``.com``
    (``AMAZON.COM, INC`` -> ``amazon``, ``Microsoft Corp`` -> ``microsoft``)."""
    core = _LEGAL.sub("", name.lower().strip(" .,"))
    core = re.sub(r"\.(?:com|net|org|io)\b", "", core)
    return " ".join(re.sub(r"[^\w&]+", " ", core).split())


def _words(text: str) -> str:
    return " " + " ".join(re.sub(r"[^\w&]+", " ", re.sub(r"['’]s\b", "", text.lower())).split()) + " "


@dataclass(frozen=True, slots=True)
class CorpusDocuments:
    latest: tuple[str, ...]  # ids of each series' newest document (latest_of_series)
    entities: Mapping[str, tuple[str, ...]]  # core name -> the documents' main entity names with that core

    @classmethod
    def of(cls, documents: Iterable[tuple[str, str, DocumentFacts]]) -> CorpusDocuments:
        docs = list(documents)
        entities: dict[str, list[str]] = {}
        for _, _, facts in docs:
            if facts.entities and len(core := entity_core(facts.entities[0])) >= 3:
                names = entities.setdefault(core, [])
                if facts.entities[0] not in names:
                    names.append(facts.entities[0])
        return cls(tuple(latest_of_series(docs)), {k: tuple(v) for k, v in entities.items()})

    def named_entities(self, text: str) -> tuple[str, ...]:
        """The main entity names of documents whose organisation the text names (``Intel's`` -> Intel Corporation)."""
        words = _words(text)
        return tuple(name for core, names in self.entities.items() if f" {core} " in words for name in names)


class DocumentsCache:
    """:class:`CorpusDocuments` per corpus, rebuilt when the corpus's documents change. Thread-safe."""

    def __init__(self, catalog: Catalog) -> None:
        self.catalog = catalog
        self._cache: dict[str, tuple[tuple[int, str], CorpusDocuments]] = {}
        self._lock = threading.Lock()

    def get(self, corpus: str) -> CorpusDocuments:
        signature = self.catalog.documents_signature(corpus)
        with self._lock:
            hit = self._cache.get(corpus)
        if hit is not None and hit[0] == signature:
            return hit[1]
        value = CorpusDocuments.of(self.catalog.document_facts(corpus))
        with self._lock:
            self._cache[corpus] = (signature, value)
        return value
