"""The registries decide: one ``module:attribute`` resolver, third-party plug-ins through real entry points (a
dist-info on the path, as pip installs one), and settings that name no registered plug-in refused at start-up
with the list of those that are."""

from __future__ import annotations

from pathlib import Path

import pytest

from mmrag.config import Settings
from mmrag.embed import base
from mmrag.errors import InvalidInput, NotFound
from mmrag.generate import factory
from mmrag.pipeline import build_pipeline
from mmrag.registry import Registry, resolve
from mmrag.spaces import registry as spaces
from mmrag.spaces.bm25 import Bm25Space
from tests.fixtures import fake_embedders

PLUGIN = '''
from mmrag.spaces.bm25 import Bm25Space
from tests.fixtures.fake_embedders import dense


class ThirdPartySpace(Bm25Space):
    name = "thirdparty"


def embedder(name, options):
    return dense(name, options)


def vlm(config):
    return "a VLM backend for " + config.model
'''


@pytest.fixture()
def installed_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A package ``mmrag_plugin`` installed as pip would (its dist-info with entry points), and fresh registries
    (the module's read the entry points once, before it was installed)."""
    (tmp_path / "mmrag_plugin.py").write_text(PLUGIN)
    dist = tmp_path / "mmrag_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: mmrag-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[mmrag.spaces]\nthirdparty = mmrag_plugin:ThirdPartySpace\n\n"
                                           "[mmrag.embedders]\nthird = mmrag_plugin:embedder\n\n"
                                           "[mmrag.vlm_backends]\nthird-vlm = mmrag_plugin:vlm\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(spaces, "SPACES", Registry("space", spaces.SPACE_TYPES, spaces.SPACES.group,
                                                   check=lambda entry: isinstance(entry, type)))
    monkeypatch.setattr(base, "EMBEDDERS", Registry("embedder backend", base.BACKENDS, base.EMBEDDERS.group))
    monkeypatch.setattr(factory, "VLM_REGISTRY", Registry("VLM backend", factory.VLM_BACKENDS,
                                                          factory.VLM_REGISTRY.group))


def test_one_resolver_for_every_module_attribute_path() -> None:
    assert resolve("tests.fixtures.fake_embedders:dense") is fake_embedders.dense
    assert resolve("mmrag.spaces.bm25:Bm25Space.build") == Bm25Space.build  # a dotted attribute
    for bad in ("tests.fixtures.fake_embedders", ":dense", "tests.fixtures.fake_embedders:"):
        with pytest.raises(InvalidInput, match=r"package\.module:attribute"):
            resolve(bad)


@pytest.mark.usefixtures("installed_plugin")
def test_third_party_plug_ins_register_through_entry_points(minilm) -> None:
    assert [spaces.SPACES.group, base.EMBEDDERS.group, factory.VLM_REGISTRY.group] == [
        "mmrag.spaces", "mmrag.embedders", "mmrag.vlm_backends"]
    assert spaces.space_names() == ("text", "bm25", "document", "clip", "colpali", "thirdparty")
    assert spaces.SPACES.entries["thirdparty"] == "mmrag_plugin:ThirdPartySpace"  # not imported until used
    built = spaces.build_spaces({"text": minilm})["thirdparty"]
    assert type(built).__name__ == "ThirdPartySpace" and "thirdparty" in spaces.page_spaces()
    assert base.load_embedder("third:7").dim == 7
    assert "third" in base.registered_prefixes()
    assert factory.build_backend(Settings(vlm={"backend": "third-vlm", "model": "m"}).vlm) == "a VLM backend for m"


def test_a_built_in_keeps_its_name_against_an_entry_point(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    dist = tmp_path / "squatter-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: squatter\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[mmrag.spaces]\nbm25 = squatter:Other\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    fresh: Registry[type] = Registry("space", spaces.SPACE_TYPES, spaces.SPACES.group)
    assert fresh.names() == list(spaces.SPACE_TYPES) and fresh.entries["bm25"] == "mmrag.spaces.bm25:Bm25Space"


def test_settings_naming_no_registered_plug_in_are_refused_at_start_up(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path, vlm={"backend": "vlmx"})
    with pytest.raises(InvalidInput, match=r"MMRAG_VLM__BACKEND='vlmx' \(or 'none'\) names no registered VLM "
                                           r"backend \('vlmx'\); registered: transformers, vllm"):
        build_pipeline(settings)
    settings = Settings(data_dir=tmp_path, vlm={"backend": "none"}, embed={"clip_model": "nope:ViT"})
    with pytest.raises(InvalidInput, match=r"MMRAG_EMBED__CLIP_MODEL='nope:ViT' names no registered embedder "
                                           r"backend \('nope'\); registered: st, open_clip, hf, colpali"):
        build_pipeline(settings)
    with pytest.raises(NotFound, match="unknown space 'vlmx'; known: text, bm25"):
        spaces.space_type("vlmx")
    with pytest.raises(ValueError, match="unknown space 'vlmx'; registered: text, bm25, document, clip, colpali"):
        spaces.check_space_name("vlmx")
