"""``mmrag ingest`` then ``mmrag answer`` in-process (no server): extractive answer, labelled."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from cli import app


def test_ingest_then_answer_json(tmp_path, monkeypatch, corpus_dir):
    for key, value in {"MMRAG_DATA_DIR": str(tmp_path / "d"), "MMRAG_EMBED__CLIP_MODEL": "",
                       "MMRAG_EMBED__COLPALI_MODEL": "", "MMRAG_VLM__BACKEND": "none"}.items():
        monkeypatch.setenv(key, value)
    runner = CliRunner()
    ingested = runner.invoke(app, ["ingest", str(corpus_dir / "pdf" / "multi_page.pdf"), "-c", "t"])
    assert ingested.exit_code == 0, ingested.output
    out = runner.invoke(app, ["answer", "who patented the typewriter and when", "-c", "t", "-k", "2", "--json"])
    assert out.exit_code == 0, out.output
    done = json.loads(out.stdout[out.stdout.index("{"):])
    assert done["mode"] == "extractive" and "typewriter" in done["answer"]
    assert done["citations"][0] == {**done["citations"][0], "filename": "multi_page.pdf", "page": 1}
    missing = runner.invoke(app, ["answer", "x", "-c", "nope"])
    assert missing.exit_code == 2 and "unknown corpus" in missing.output
