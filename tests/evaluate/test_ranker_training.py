"""A corpus's own ranker is installed only where it wins on the folds it was not trained on (no forcing)."""

from __future__ import annotations

import json

from mmrag.evaluate.rank_data import JudgedQuestion
from mmrag.evaluate.ranker_training import REPORT_FILE, train_corpus_ranker
from mmrag.retrieve.search import RANKER_FILE
from tests.fixtures.company_reports import COMPANIES, TOPICS, company_report

TABLE = "{} table of {} 2021 1,234 2020 1,111 2019 987 total 3,332"  # page 2i+2 of company_report


def test_a_ranker_that_cannot_beat_todays_order_is_not_installed_unless_forced(pipeline) -> None:
    pipeline.corpora.create_corpus("mine")
    questions = []
    for company in COMPANIES:
        pipeline.ingest.file_bytes("mine", company_report(company.title()), f"{company}.pdf")
        for i, topic in enumerate(TOPICS):  # each question is its page's own text: today's order has it first
            questions.append(JudgedQuestion(f"{company}-{i}", TABLE.format(company.title(), topic),
                                            {f"{company}.pdf#{2 * i + 2}": 2}, company))
    retriever = pipeline.retriever
    folder = retriever.catalog.corpora.folder("mine")
    report, _ = train_corpus_ranker(retriever, "mine", questions)
    assert report.before == 1.0 and report.after <= report.before and not report.wins
    assert not report.installed and not (folder / RANKER_FILE).exists()
    assert retriever.ranker_in_use("mine").active != "own"
    assert json.loads((folder / REPORT_FILE).read_text())["installed"] is False  # what the page shows
    forced, _ = train_corpus_ranker(retriever, "mine", questions, force=True)
    assert forced.installed and forced.forced and (folder / RANKER_FILE).is_file()
    assert retriever.ranker_in_use("mine").active == "own"
