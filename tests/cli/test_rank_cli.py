"""``mmrag rank train``: a user's own suite over their own corpus trains that corpus's ranker."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli import app
from mmrag.retrieve.ranker import load_ranker
from mmrag.retrieve.search import RANKER_FILE
from tests.fixtures.company_reports import COMPANIES, TOPICS, company_report, question


def test_a_corpus_trains_and_installs_its_own_ranker_from_its_users_suite(tmp_path: Path, pipeline) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    pipeline.corpora.create_corpus("mine")
    queries, qrels = [], ["query-id\tcorpus-id\tscore"]
    for company in COMPANIES:
        (docs / f"{company}.pdf").write_bytes(company_report(company.title()))
        pipeline.ingest.file_bytes("mine", (docs / f"{company}.pdf").read_bytes(), f"{company}.pdf")
        for i in range(len(TOPICS)):
            qid = f"{company}-{i}"
            queries.append({"_id": qid, "text": question(company, i),
                            "tags": [f"company:{company}"]})
            qrels.append(f"{qid}\t{company}.pdf#{2 * i + 2}\t2")
    data_dir = pipeline.settings.data_dir
    pipeline.close()
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "queries.jsonl").write_text("\n".join(json.dumps(q) for q in queries) + "\n")
    (suite / "qrels.tsv").write_text("\n".join(qrels) + "\n")
    (suite / "suite.yaml").write_text(f"name: mine\ndataset: {{corpus: {docs}}}\n")
    out = tmp_path / "model.txt"
    env = {"HF_HUB_OFFLINE": "1"}
    result = CliRunner().invoke(app, ["rank", "train", str(suite), "--data-dir", str(data_dir), "--out", str(out),
                                      "--corpus", "mine", "--force"], env=env)
    assert result.exit_code == 0, result.output
    assert "leave-one-fold-out page nDCG@5" in result.output and "acme" in result.output
    assert load_ranker(out).booster.num_trees() > 0
    installed = data_dir / "corpora" / "mine" / RANKER_FILE
    assert installed.is_file() and "now ranks with its own model" in result.output
    refused = CliRunner().invoke(app, ["rank", "train", str(suite), str(suite), "--data-dir", str(data_dir),
                                       "--corpus", "mine"], env=env)
    assert refused.exit_code == 2 and "--corpus takes one suite" in refused.output
    assert "ref_page" not in load_ranker(out).features
    references = tmp_path / "references.txt"
    result = CliRunner().invoke(app, ["rank", "train", str(suite), "--data-dir", str(data_dir), "--out",
                                      str(references), "--corpus", "mine", "--force", "--features", "references"],
                                env=env)
    assert result.exit_code == 0, result.output
    assert {"ref_page", "ref_caption"} <= set(load_ranker(references).features)
    unknown = CliRunner().invoke(app, ["rank", "train", str(suite), "--data-dir", str(data_dir),
                                       "--features", "colour"], env=env)
    assert unknown.exit_code == 2 and "one of base, context, references" in unknown.output
