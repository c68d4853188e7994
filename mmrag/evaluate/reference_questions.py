"""Questions that name a page, a figure or a table by its number, written from a corpus's own pages: training
data for the ranker's reference features (:data:`mmrag.retrieve.rank_features.REFERENCE_FEATURES`).

Judged questions that name a page by number are few (about one in nine of a benchmark's), and a feature that is
1 on a couple of dozen candidate rows cannot be learned by trees whose leaves hold 50 rows at least
(:data:`mmrag.retrieve.ranker.PARAMS`). The documents themselves say which page is which: a page whose printed
label is ``48`` answers "What does page 48 show?", the page captioning "Figure 3" answers "What does Figure 3
show?". Each document gives at most one question of each kind (a printed page label, else a page number; a figure
caption; a table caption), each on a label or caption that only one page of the document carries, chosen from
the middle of the document's pages that have one (deterministic). Each is searched within its document, and
belongs to its document's fold, so a fold's ranker trains only on questions about the other folds' documents
(:func:`mmrag.evaluate.rank_data.fold_training` drops the rest). Content-free on purpose: the question's number is
all there is to go by; real questions add their content words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path

from mmrag.catalog import Catalog
from mmrag.evaluate.rank_data import JudgedQuestion
from mmrag.retrieve.references import PageReferences, page_references

TEMPLATES = {"page": "What does page {} show?", "figure": "What does Figure {} show?",
             "table": "What does Table {} show?"}


def _unique(pages: Sequence[tuple[int, PageReferences]], numbers_of: str) -> list[tuple[int, str]]:
    """(page number, its number of that kind) for numbers only one page of the document carries, by page."""
    seen = Counter(str(n) for _, refs in pages for n in getattr(refs, numbers_of))
    return sorted((number, str(n)) for number, refs in pages for n in getattr(refs, numbers_of) if seen[str(n)] == 1)


def document_reference_questions(file: str, pages: Sequence[tuple[int, str]], fold: str,
                                 document_id: str | None = None) -> list[JudgedQuestion]:
    """At most one question per kind of reference for one document (``file``: its name as judged; ``pages``:
    (number, text) of each page)."""
    read = [(number, page_references(text)) for number, text in pages]
    choices = {"page": _unique(read, "labels"), "figure": _unique(read, "figure_captions"),
               "table": _unique(read, "table_captions")}
    if not choices["page"] and not any(refs.labels for _, refs in read):  # no printed labels: the file's numbers
        choices["page"] = [(number, str(number)) for number, _ in read]
    out = []
    for kind, found in choices.items():
        if found:
            number, named = found[len(found) // 2]
            out.append(JudgedQuestion(f"ref:{file}#{number}:{kind}", TEMPLATES[kind].format(named),
                                      {f"{file}#{number}": 2}, fold,
                                      [document_id] if document_id is not None else None))
    return out


def corpus_reference_questions(catalog: Catalog, corpus: str, folds: Mapping[str, str]) -> list[JudgedQuestion]:
    """The reference questions of every document of ``corpus`` whose file has a fold (``folds``: file name ->
    fold, from the judged questions about it), each searched within its document."""
    out: list[JudgedQuestion] = []
    offset = 0
    while batch := catalog.documents.listed(corpus, offset=offset, limit=1000):
        offset += len(batch)
        for doc in batch:
            file = Path(doc.filename).name
            if file not in folds:
                continue
            numbered = catalog.pages.first_of_document(corpus, doc.id, doc.page_count)
            texts = catalog.pages.texts_and_sections(corpus, [pid for pid, _ in numbered])
            pages = [(number, texts.get(pid, ("", []))[0]) for pid, number in numbered]
            out += document_reference_questions(file, pages, folds[file], doc.id)
    return out


def question_folds(questions: Sequence[JudgedQuestion]) -> dict[str, str]:
    """file name -> the fold of the judged questions about it (the first one's, where several disagree)."""
    out: dict[str, str] = {}
    for q in questions:
        for key, grade in sorted(q.judged.items()):
            if grade > 0:
                out.setdefault(key.rpartition("#")[0], q.fold)
    return out
