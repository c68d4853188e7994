"""Questions naming a page, a figure or a table by number, written from a document's own pages."""

from __future__ import annotations

from mmrag.evaluate.rank_data import JudgedQuestion
from mmrag.evaluate.reference_questions import document_reference_questions, question_folds


def test_each_kind_of_reference_gives_one_question_on_the_page_that_alone_carries_it() -> None:
    pages = [(1, "Annual report 2019"), (2, "Contents i"), (3, "Figure 1: Sales by region 1"),
             (4, "Table 1. Staff as Figure 1 shows 2"), (5, "Figure 2: Costs Figure 3: Prices 3"),
             (6, "Table 1: continued 4")]
    got = {q.id: q for q in document_reference_questions("r.pdf", pages, "brochure", "doc-1")}
    assert set(got) == {"ref:r.pdf#5:page", "ref:r.pdf#5:figure"}  # table 1 is captioned twice: no question
    page = got["ref:r.pdf#5:page"]  # labels 1-4 stand on pages 3-6: the middle one
    assert page.text == "What does page 3 show?" and page.judged == {"r.pdf#5": 2}  # the printed label, not the 3rd
    assert page.document_ids == ["doc-1"] and page.fold == "brochure"
    assert got["ref:r.pdf#5:figure"].text == "What does Figure 2 show?"  # figure 1's caption: page 3; 2 and 3: 5


def test_a_document_without_printed_labels_is_asked_by_its_page_numbers() -> None:
    got = document_reference_questions("deck.pdf", [(n, f"Slide about topic {chr(64 + n)}") for n in range(1, 6)],
                                       "tutorial")
    assert [(q.text, q.judged) for q in got] == [("What does page 3 show?", {"deck.pdf#3": 2})]
    assert document_reference_questions("empty.pdf", [], "x") == []


def test_a_document_is_in_the_fold_of_the_questions_about_it() -> None:
    qs = [JudgedQuestion("a", "t", {"x.pdf#2": 1, "y.pdf#1": 0}, "brochure"), JudgedQuestion("b", "t", {"y.pdf#3": 2},
                                                                                              "guidebook")]
    assert question_folds(qs) == {"x.pdf": "brochure", "y.pdf": "guidebook"}
