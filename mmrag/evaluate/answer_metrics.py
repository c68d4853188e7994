"""Answer metrics as pure functions: ANLS, exact match, token F1, cited-page accuracy.

- **ANLS** (DocVQA): lower-case, collapse whitespace, normalised Levenshtein
  distance ``NL``; the similarity is ``1 - NL`` if ``NL < 0.5`` else 0; the
  max over gold answers.
- **Exact match / token F1** with SQuAD normalisation: lower-case, drop
  punctuation, drop the articles a/an/the, collapse whitespace; max over gold
  answers (F1 over bags of tokens, as SQuAD v1.1 ``evaluate.py``).
- **Cited-page accuracy**: 1 if any citation names an evidence page
  (``filename#page``), else 0.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Iterable, Sequence

ANSWER_METRICS = ("anls", "exact_match", "f1", "cited_page_accuracy")
"""Keys of the answer metrics in reports."""

_PUNCTUATION = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def levenshtein(a: str, b: str) -> int:
    """Edit distance (insert, delete, substitute, each cost 1)."""
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, ca in enumerate(a, start=1):
        current = [i]
        for j, cb in enumerate(b, start=1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (ca != cb)))
        previous = current
    return previous[-1]


def _anls_normalise(text: str) -> str:
    return " ".join(text.strip().lower().split())


def anls(prediction: str, golds: Sequence[str], threshold: float = 0.5) -> float:
    """ANLS of one prediction against its gold answers (0 when there are none)."""
    pred = _anls_normalise(prediction)
    best = 0.0
    for gold in golds:
        ref = _anls_normalise(gold)
        longest = max(len(pred), len(ref))
        distance = levenshtein(pred, ref) / longest if longest else 0.0
        if distance < threshold:
            best = max(best, 1.0 - distance)
    return best


def squad_normalise(text: str) -> str:
    """SQuAD answer normalisation: lower, no punctuation, no articles, single spaces."""
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    """1.0 if the normalised prediction equals a normalised gold answer."""
    pred = squad_normalise(prediction)
    return float(any(pred == squad_normalise(gold) for gold in golds))


def _token_f1(prediction: str, gold: str) -> float:
    pred_tokens = squad_normalise(prediction).split()
    gold_tokens = squad_normalise(gold).split()
    if not pred_tokens or not gold_tokens:
        return float(pred_tokens == gold_tokens)
    common = sum((Counter(pred_tokens) & Counter(gold_tokens)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred_tokens)
    recall = common / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def token_f1(prediction: str, golds: Sequence[str]) -> float:
    """Max token-level F1 over gold answers."""
    return max((_token_f1(prediction, gold) for gold in golds), default=0.0)


def cited_page_accuracy(cited: Iterable[str], evidence: Iterable[str]) -> float:
    """1.0 if a cited ``filename#page`` key is one of the evidence pages."""
    return float(bool(set(cited) & set(evidence)))


def answer_metrics(
    prediction: str, golds: Sequence[str], cited: Iterable[str], evidence: Iterable[str]
) -> dict[str, float]:
    """All answer metrics of one question."""
    return {
        "anls": anls(prediction, golds),
        "exact_match": exact_match(prediction, golds),
        "f1": token_f1(prediction, golds),
        "cited_page_accuracy": cited_page_accuracy(cited, evidence),
    }
