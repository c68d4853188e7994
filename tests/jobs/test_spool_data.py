"""Stage outputs in the spool are data, not pickles (issue 21): every kind a stage writes comes back
equal, and a spool file that names anything but an mmrag type (or holds a pickle) runs nothing."""

from __future__ import annotations

import io
import json
import pickle

import numpy as np
import pytest

from mmrag.config import IngestConfig
from mmrag.ingest.source import prepare_source
from mmrag.jobs import spool_codec
from mmrag.jobs.model import ParsedBatch
from mmrag.jobs.spool import Spool
from mmrag.store.base import PointRecord, SparseVec
from mmrag.types import Page, TextSource, Word
from tests.ingest.test_formats import formats_file


def test_every_stage_output_comes_back_equal(tmp_path):
    spool = Spool(tmp_path / "spool")
    source = prepare_source(formats_file("md/duck.md"), "duck.md", IngestConfig())
    words = [Word(f"w{i}", (i / 100, 0.25, 0.5, 0.75), None if i % 3 else 88.5) for i in range(40)]
    page = Page("p1", "d1", 1, 612, 792, "h", "text", words, TextSource.OCR, None, {"parse": 0.5}, ["A", "B"], [])
    points = [PointRecord("id", {"text": np.arange(6, dtype=np.float32).reshape(2, 3), "bm25": SparseVec([3], [0.5]),
                                 "clip": [0.25, 0.5]}, {"page": 1, "meta": {"$b": 1, "m": [1, "x"]}})]
    values = {"source": source, "pages": ParsedBatch("application/pdf", [page]), "images": [b"\x89PNG...", b""],
              "points": points}
    for kind, value in values.items():
        spool.put("job", 0, 0, kind, value)
        back = spool.get("job", 0, 0, kind)
        if kind == "points":
            assert back[0].payload == value[0].payload and back[0].vectors["bm25"] == value[0].vectors["bm25"]
            assert np.array_equal(back[0].vectors["text"], value[0].vectors["text"])
            assert back[0].vectors["text"].dtype == np.float32
        else:
            assert back == value, kind
    files = sorted(p.name for p in spool.file_dir("job", 0).iterdir())
    assert files == ["b0.images.npz", "b0.pages.npz", "b0.points.npz", "b0.source.npz"]
    for path in spool.file_dir("job", 0).iterdir():
        assert b"\x80\x05" not in path.read_bytes()[:2]  # no pickle protocol header
        with np.load(path, allow_pickle=False) as npz:  # plain arrays: loadable without pickle
            assert "structure" in npz.files


def _npz(header: dict) -> bytes:
    buf = io.BytesIO()
    np.savez(buf, structure=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8))
    return buf.getvalue()


@pytest.mark.parametrize("name", ["os:system", "subprocess:Popen", "builtins:eval", "mmrag.config:load_settings"])
def test_a_spool_file_naming_other_code_is_refused(name):
    with pytest.raises(spool_codec.SpoolFormatError):
        spool_codec.loads(_npz({"classes": [name], "value": {"o": 0, "v": ["echo pwned"]}}))


def test_a_record_of_another_version_is_refused_naming_its_class():
    header = {"classes": ["mmrag.jobs.model:ParsedBatch"], "value": {"o": 0, "v": ["application/pdf", [], "extra"]}}
    with pytest.raises(spool_codec.SpoolFormatError, match="ParsedBatch of 3 fields; this version's has 2"):
        spool_codec.loads(_npz(header))


def test_a_pickle_in_the_spool_is_not_unpickled(tmp_path):
    class Boom:
        def __reduce__(self):
            return (exec, ("raise SystemExit('unpickled')",))

    spool = Spool(tmp_path / "spool")
    path = spool.file_dir("job", 0) / "b0.points.npz"
    path.parent.mkdir(parents=True)
    path.write_bytes(pickle.dumps(Boom()))
    with pytest.raises(spool_codec.SpoolFormatError):
        spool.get("job", 0, 0, "points")
