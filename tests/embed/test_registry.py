"""The backend table: prefixes -> dotted paths imported on first use; extensions and fakes registered
by their users (the fakes by tests/conftest.py), never by importing a module."""

from __future__ import annotations

import pytest

from mmrag.embed import base
from mmrag.embed.base import BACKENDS, EmbedderOptions, load_embedder, register_embedder
from mmrag.errors import InvalidInput, NotFound
from tests.fixtures import fake_embedders


@pytest.fixture()
def restore_registry():
    saved = dict(base.EMBEDDERS.entries)
    yield
    base.EMBEDDERS.entries.clear()
    base.EMBEDDERS.entries.update(saved)


def test_production_table_holds_the_built_ins_only() -> None:
    assert set(BACKENDS) == {"st", "open_clip", "hf", "colpali"}
    assert all(":" in path and path.startswith("mmrag.embed.") for path in BACKENDS.values())


def test_fakes_come_from_the_tests_registration() -> None:
    e = load_embedder("fake-mv:8")
    assert isinstance(e, fake_embedders.FakeEmbedder) and e.multivector and e.dim == 8


def test_a_dotted_path_is_imported_on_first_use(restore_registry: None) -> None:
    register_embedder("probe", "tests.fixtures.fake_embedders:dense")
    assert base.EMBEDDERS.entries["probe"] == "tests.fixtures.fake_embedders:dense"  # not imported yet
    assert load_embedder("probe:3").dim == 3
    assert base.EMBEDDERS.entries["probe"] is fake_embedders.dense  # imported once, kept


def test_a_callable_factory_registers_too(restore_registry: None) -> None:
    seen: list[tuple[str, EmbedderOptions]] = []

    def factory(name: str, options: EmbedderOptions) -> fake_embedders.FakeEmbedder:
        seen.append((name, options))
        return fake_embedders.FakeEmbedder(5, False, f"mine:{name}")

    register_embedder("mine", factory)
    assert load_embedder("mine:x", EmbedderOptions(device="cuda:1")).spec == "mine:x"
    assert seen == [("x", EmbedderOptions(device="cuda:1"))]


def test_bad_specs_and_paths_say_what_is_allowed(restore_registry: None) -> None:
    with pytest.raises(NotFound, match=r"known: .*colpali.*fake.*st"):
        load_embedder("nope:1")
    with pytest.raises(InvalidInput, match="backend:name"):
        load_embedder("st")
    with pytest.raises(InvalidInput, match="no ':'"):
        register_embedder("a:b", "x:y")
    register_embedder("broken", "tests.fixtures.fake_embedders")  # no attribute part
    with pytest.raises(InvalidInput, match=r"package\.module:attribute"):
        load_embedder("broken:1")


def test_settings_backends_are_registered_by_the_composition_root(restore_registry: None) -> None:
    from mmrag.config import Settings
    from mmrag.pipeline import build_embedders

    settings = Settings(embed={"text_model": "viaenv:6", "clip_model": None, "colpali_model": None,
                               "backends": {"viaenv": "tests.fixtures.fake_embedders:dense"}})
    embedders, unavailable = build_embedders(settings)
    assert embedders["text"].dim == 6
    assert unavailable == {"clip": "disabled in configuration", "colpali": "disabled in configuration"}
