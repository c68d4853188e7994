"""Answer metrics: ANLS against PyPI ``anls``; SQuAD exact match / F1 known cases."""

from __future__ import annotations

import random
import string

import anls as anls_package  # declared dev dependency (PyPI anls): the DocVQA reference
import pytest

from mmrag.evaluate.answer_metrics import anls, answer_metrics, exact_match, levenshtein, squad_normalise, token_f1


def _noisy(rng: random.Random, text: str) -> str:
    chars = list(text)
    for _ in range(rng.randint(0, 4)):
        op = rng.choice("ids")
        pos = rng.randrange(len(chars) + 1)
        if op == "i":
            chars.insert(pos, rng.choice(string.ascii_letters + " "))
        elif chars and pos < len(chars):
            if op == "d":
                del chars[pos]
            else:
                chars[pos] = rng.choice(string.ascii_letters)
    return "".join(chars)


def test_anls_matches_the_anls_package_on_random_strings() -> None:
    rng = random.Random(3)
    words = ["Invoice", "3139", "CHF 3949.75", "the all-metal type", "Sholes", "  spaced  out ", "1868", ""]
    for _ in range(600):
        golds = rng.sample(words[:-1], rng.randint(1, 3))
        prediction = _noisy(rng, rng.choice(words))
        if rng.random() < 0.3:
            prediction = prediction.upper()
        expected = anls_package.anls_score(prediction, golds, threshold=0.5)
        assert anls(prediction, golds) == pytest.approx(expected), (prediction, golds)


def test_anls_known_values() -> None:
    assert anls("1868", ["1868"]) == 1.0
    assert anls("CHF 3949.75", ["chf  3949.75"]) == 1.0  # case and whitespace runs do not count
    assert anls("1869", ["1868"]) == pytest.approx(0.75)
    assert anls("abcd", ["wxyz"]) == 0.0  # distance 1.0 >= 0.5 threshold
    assert anls("ab", ["abcd"]) == 0.0  # NL = 0.5 exactly: not below the threshold
    assert anls("x", []) == 0.0
    assert levenshtein("kitten", "sitting") == 3


def test_squad_exact_match_and_f1() -> None:
    assert squad_normalise("The  All-Metal type!") == "allmetal type"
    assert exact_match("the 1868.", ["1868"]) == 1.0
    assert exact_match("in 1868", ["1868"]) == 0.0
    assert token_f1("in 1868", ["1868"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert token_f1("Christopher Sholes", ["Christopher Latham Sholes", "Sholes"]) == pytest.approx(0.8)
    assert token_f1("nothing", ["1868"]) == 0.0
    assert token_f1("", [""]) == 1.0


def test_cited_page_accuracy_in_answer_metrics() -> None:
    hit = answer_metrics("1868", ["1868"], ["a.pdf#2", "b.pdf#1"], ["b.pdf#1"])
    miss = answer_metrics("1868", ["1868"], ["a.pdf#2"], ["a.pdf#1"])
    assert hit["cited_page_accuracy"] == 1.0
    assert miss["cited_page_accuracy"] == 0.0
    assert set(hit) == {"anls", "exact_match", "f1", "cited_page_accuracy"}
