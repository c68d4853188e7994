"""The settings as a person reads them: the README's table is made from the settings classes (and fails
here when stale), ``mmrag config`` says where each value came from, and the grouped settings (ranking,
the embedding service) are set like any other."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from cli import app
from mmrag.config import Settings, load_settings, merge_settings
from mmrag.settings_doc import TABLE_END, TABLE_START, readme_table, setting_rows, with_table

README = Path(__file__).resolve().parents[2] / "README.md"


def test_the_readme_table_is_the_one_the_settings_classes_make() -> None:
    text = README.read_text(encoding="utf-8")
    assert with_table(text) == text, "stale: run `python -m mmrag.settings_doc --write README.md`"
    stale = text.replace("| `MMRAG_API__PORT` | `8000` |", "| `MMRAG_API__PORT` | `8080` |")
    assert with_table(stale) == text  # what the check would put back
    table = readme_table()
    assert table.startswith(TABLE_START) and table.endswith(TABLE_END)


def test_every_setting_has_a_meaning_and_its_own_variable() -> None:
    rows = setting_rows()
    envs = [r.env for r in rows]
    assert len(set(envs)) == len(envs) > 100
    assert not [r.env for r in rows if not r.doc]
    assert {"MMRAG_RETRIEVE__RANKING__TITLE_WEIGHT", "MMRAG_RETRIEVE__RANKING__RANKER",
            "MMRAG_EMBED_SERVICE__BATCHING__MAX_BATCH", "MMRAG_EMBED_SERVICE__LIMITS__MAX_ITEMS"} <= set(envs)
    assert {r.env for r in rows if r.common} >= {"MMRAG_DATA_DIR", "MMRAG_VLM__BACKEND", "MMRAG_EMBED__CLIP_MODEL"}


def test_mmrag_config_prints_each_value_with_its_source(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text("MMRAG_INGEST__DPI=200\nMMRAG_API__PORT=9000\n")
    monkeypatch.setenv("MMRAG_API__PORT", "9001")  # the environment wins over the file
    out = CliRunner().invoke(app, ["config"]).output
    assert "* MMRAG_API__PORT=9001  (env)\n" in out
    assert "  MMRAG_INGEST__DPI=200  (file)\n" in out
    assert "  MMRAG_JOBS__BATCH_PAGES=16  (default)\n" in out
    assert "* MMRAG_STORE__URL=unset  (default)\n" in out
    common = CliRunner().invoke(app, ["config", "--common"]).output
    assert "MMRAG_API__PORT=9001" in common and "MMRAG_INGEST__DPI" not in common


def test_ranking_and_the_embedding_service_are_set_like_any_setting(monkeypatch) -> None:
    monkeypatch.setenv("MMRAG_RETRIEVE__RANKING__TITLE_WEIGHT", "0")
    monkeypatch.setenv("MMRAG_EMBED_SERVICE__BATCHING__MAX_BATCH", "8")
    settings = Settings()
    assert settings.retrieve.ranking.title_weight == 0 and settings.embed_service.batching.max_batch == 8
    suite = merge_settings(load_settings(), {"retrieve": {"ranking": {"ranker": "off", "figure_weight": 0}}})
    assert (suite.retrieve.ranking.ranker, suite.retrieve.ranking.figure_weight) == ("off", 0)
    assert suite.retrieve.ranking.title_weight == 0  # the rest of the object stays as it was
