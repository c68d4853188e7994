"""The corpus owner on a real embedded store and catalog: spaces dropped when their model is off,
the collection shaped by the corpus's spaces, conflicts, idempotent ensure, delete."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from mmrag.catalog import Catalog
from mmrag.config import CorpusConfig
from mmrag.corpora import Corpora
from mmrag.embed.base import EmbedderOptions, load_embedder
from mmrag.embed.lazy import LazyEmbedder
from mmrag.errors import Conflict, InvalidInput, NotFound
from mmrag.jobs.spool import Spool
from mmrag.jobs.state import JobStore
from mmrag.jobs.writer import JobWriter
from mmrag.spaces.registry import build_spaces
from mmrag.store import open_store
from mmrag.types import Document, Page, TextSource
from tests.conftest import make_settings


def _broken(unavailable: dict[str, str]) -> LazyEmbedder:
    """A CLIP model that cannot load; its failure turns the space off with the reason, as the pipeline's do."""
    def load() -> LazyEmbedder:
        raise OSError("no weights at /nowhere/clip.safetensors")

    return LazyEmbedder("fake:broken", load, lambda reason: unavailable.__setitem__("clip", reason))


@pytest.fixture()
def corpora(tmp_path: Path) -> Iterator[Corpora]:
    settings = make_settings(tmp_path)
    catalog, store, jobs = Catalog(tmp_path), open_store(settings.store, tmp_path), JobStore(tmp_path)
    unavailable: dict[str, str] = {}
    embedders = {"text": load_embedder("fake:8", EmbedderOptions()), "clip": _broken(unavailable)}
    writer = JobWriter(catalog, store, jobs, Spool(tmp_path / "spool"))
    yield Corpora(catalog, store, build_spaces(embedders), embedders, unavailable, writer)
    store.close()
    catalog.close()
    jobs.close()


def test_create_drops_spaces_whose_model_is_off_and_shapes_the_collection(corpora: Corpora, caplog) -> None:
    config = corpora.create_corpus("c", CorpusConfig(spaces=["text", "bm25", "clip"]))
    assert config.spaces == ["text", "bm25"]
    assert config.text_model == "fake:8"
    assert "created without spaces ['clip']" in caplog.text and "nowhere/clip.safetensors" in caplog.text
    assert "nowhere/clip.safetensors" in corpora.unavailable["clip"]
    assert corpora.catalog.corpora.config("c").spaces == ["text", "bm25"]
    assert [s.name for s in corpora.collection_spec(config).spaces] == ["text", "bm25"]  # the named vectors
    assert corpora.store.has_collection("c") and corpora.store.count("c") == 0


def test_refusals_say_what_was_wrong(corpora: Corpora) -> None:
    with pytest.raises(InvalidInput, match="unknown spaces"):
        corpora.create_corpus("c", CorpusConfig.model_construct(spaces=["text", "sound"]))
    with pytest.raises(Conflict, match="none of the requested spaces"):
        corpora.create_corpus("c", CorpusConfig(spaces=["clip"]))
    with pytest.raises(InvalidInput, match="not allowed"):
        corpora.create_corpus("Bad Name!")
    assert not corpora.catalog.corpora.exists("c") and not corpora.store.has_collection("c")
    corpora.create_corpus("c", CorpusConfig(spaces=["bm25"]))
    with pytest.raises(Conflict, match="already exists"):
        corpora.create_corpus("c", CorpusConfig(spaces=["bm25"]))


def test_ensure_returns_the_existing_config_and_creates_a_missing_corpus(corpora: Corpora) -> None:
    first = corpora.ensure_corpus("c", CorpusConfig(spaces=["bm25"]))
    again = corpora.ensure_corpus("c", CorpusConfig(spaces=["text", "bm25"]))  # exists: its config wins
    assert first.spaces == again.spaces == ["bm25"]
    assert [row.name for row in corpora.catalog.corpora.listed()] == ["c"]


def test_delete_removes_rows_vectors_and_documents(corpora: Corpora) -> None:
    corpora.create_corpus("c", CorpusConfig(spaces=["bm25"]))
    page = Page(id="p1", document_id="d1", number=1, width=10, height=10, image_hash="h", text="hello",
                words=[], text_source=TextSource.LAYER)
    corpora.catalog.documents.add("c", Document(id="d1", filename="a.pdf", media_type="application/pdf",
                                               size_bytes=1, pages=[page]))
    corpora.delete_document("c", "d1")
    assert corpora.catalog.documents.find("c", "d1") is None and corpora.catalog.pages.of_document("c", "d1") == []
    with pytest.raises(NotFound, match="unknown document"):
        corpora.delete_document("c", "d1")
    corpora.optimize("c")  # an empty collection optimises without error
    corpora.delete_corpus("c")
    assert not corpora.catalog.corpora.exists("c") and not corpora.store.has_collection("c")
    with pytest.raises(NotFound, match="unknown corpus"):
        corpora.delete_corpus("c")
    with pytest.raises(NotFound, match="unknown corpus"):
        corpora.optimize("c")


def test_a_space_whose_model_cannot_load_is_a_409_naming_it_in_one_line_of_ours(tmp_path: Path) -> None:
    """The model hub's own multi-line text stays in the log and /health, never in the refusal."""
    hub = ("We couldn't connect to 'https://huggingface.co' to load the files, and couldn't find them in the "
           "cached files.\nCheck your internet connection or see how to run the library in offline mode at "
           "'https://huggingface.co/docs/transformers/installation#offline-mode'.\n/root/.cache/huggingface/hub")
    settings = make_settings(tmp_path)
    catalog, store, jobs = Catalog(tmp_path), open_store(settings.store, tmp_path), JobStore(tmp_path)
    unavailable: dict[str, str] = {}

    def load() -> LazyEmbedder:
        raise OSError(hub)

    embedders = {"text": load_embedder("fake:8", EmbedderOptions()),
                 "clip": LazyEmbedder("open_clip:ViT-B-32/laion2b", load,
                                      lambda reason: unavailable.__setitem__("clip", f"open_clip: {reason}"))}
    corpora = Corpora(catalog, store, build_spaces(embedders), embedders, unavailable,
                      JobWriter(catalog, store, jobs, Spool(tmp_path / "spool")))
    try:
        with pytest.raises(Conflict) as caught:
            corpora.create_corpus("c", CorpusConfig(spaces=["clip"]))
        message = caught.value.message
        assert "clip: its model 'open_clip:ViT-B-32/laion2b' could not be loaded" in message, message
        assert "\n" not in message and "huggingface" not in message and "/root" not in message, message
        assert "available here" in message and caught.value.detail["reason"] == "space_unavailable"
    finally:
        store.close()
        catalog.close()
        jobs.close()


def test_a_corpus_records_its_text_precision_and_a_server_computing_in_another_says_so(corpora: Corpora,
                                                                                        caplog) -> None:
    text = corpora.embedders["text"]
    text.precision = "float32"
    assert corpora.create_corpus("old", CorpusConfig(spaces=["text"])).text_precision == "float32"
    assert corpora.catalog.corpora.config("old").text_precision == "float32"  # stored with the corpus
    corpora.catalog.corpora.create("older", CorpusConfig(spaces=["text"], text_model="fake:8"))  # before the record
    corpora.create_corpus("words", CorpusConfig(spaces=["bm25"]))
    corpora.warm_up()
    assert "re-ingest" not in caplog.text  # the same precision (and None read as float32): nothing to say
    text.precision = "int8"  # the server restarted with MMRAG_EMBED__TEXT_PRECISION=int8
    assert corpora.create_corpus("new", CorpusConfig(spaces=["text"])).text_precision == "int8"
    corpora.warm_up()
    warned = [r.getMessage() for r in caplog.records if "re-ingest" in r.getMessage()]
    assert len(warned) == 2 and all("computed in float32" in m and "queries in int8" in m for m in warned), warned
    assert {m.split("'")[1] for m in warned} == {"old", "older"}
    assert "MMRAG_EMBED__TEXT_PRECISION=float32" in warned[0]
    other = CorpusConfig(spaces=["text"], text_model="st:another-model", text_precision="int8")
    assert corpora.model_notes(other) == [
        "its text vectors come from 'st:another-model', this server embeds queries with 'fake:8'; re-ingest the "
        "corpus, or set MMRAG_EMBED__TEXT_MODEL=st:another-model"]


def test_a_corpus_records_its_kernels_and_a_server_on_another_kind_of_cpu_says_so(corpora: Corpora) -> None:
    text = corpora.embedders["text"]
    text.precision, text.kernels = "int8", "int8/u8s8"
    made = corpora.create_corpus("vnni", CorpusConfig(spaces=["text"]))
    assert made.text_kernels == corpora.catalog.corpora.config("vnni").text_kernels == "int8/u8s8"
    assert corpora.model_notes(made) == []
    text.kernels = "int8/u8u8"  # the data folder moved to a CPU without VNNI
    notes = corpora.model_notes(corpora.catalog.corpora.config("vnni"))
    assert len(notes) == 1 and "int8/u8s8 kernels" in notes[0] and "with int8/u8u8" in notes[0], notes
    older = CorpusConfig(spaces=["text"], text_precision="int8")  # created before the record: nothing to compare
    assert corpora.model_notes(older) == []
