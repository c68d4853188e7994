"""Storage per source byte and ingest speed: the default (page images rendered on demand from the kept
PDF, text chunk vectors stored as float16, no write-ahead log in the embedded engine) vs every page's
PNG stored as a file (``keep_page_files``, the layout before) and vs text vectors stored as float32
(``CorpusConfig.text_datatype``, the precision before).

Each round ingests the same PDFs (``--corpus``, default the docling and sec-10q PDFs of
../shared/corpus, ``--limit`` files) through the job pipeline (MiniLM text + BM25, the default
spaces) into a fresh data folder, once per arm, ABBA-alternated over ``--rounds`` rounds. Measured:
data folder bytes / source bytes (everything under the data folder once the job has finished), and
pages/s from submit to the job's end. The word boxes' share is also reported: the catalog's
compact coded form (:mod:`mmrag.catalog.word_boxes`) vs the JSON it replaced (same words, read back
through the catalog).

    python -m bench.storage [--rounds 5] [--limit 13]

ends with ``RESULT ratio_render=.. ratio_files=.. ratio_float32=.. pages_per_s_render=.. ...``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from bench._stats import machine_line, result_line, verdict
from mmrag.config import CorpusConfig, Settings
from mmrag.embed.base import load_embedder
from mmrag.evaluate.stats import interval
from mmrag.jobs.writer import Upload
from mmrag.pipeline import build_pipeline

SHARED = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def folder_bytes(path: Path) -> int:
    """Bytes on disk (allocated blocks: preallocated, sparse WAL segments count for what they use)."""
    return sum(p.stat().st_blocks * 512 for p in path.rglob("*") if p.is_file())


ARMS = ("render", "files", "float32")  # the default; every page's PNG kept; text vectors stored as float32


def one_run(files: list[Path], arm: str, minilm: object) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="mmrag-storage-") as tmp:
        settings = Settings(data_dir=Path(tmp) / "data")
        settings.embed.clip_model = settings.embed.colpali_model = None
        settings.vlm.backend = "none"
        settings.ingest.keep_page_files = arm == "files"
        pipeline = build_pipeline(settings, embedders={"text": minilm})  # type: ignore[dict-item]
        try:
            pipeline.corpora.create_corpus("c", CorpusConfig(text_datatype="float32") if arm == "float32" else None)
            uploads = [Upload(p.name, p.read_bytes(), {}) for p in files]
            t0 = time.perf_counter()
            job = pipeline.ingest.uploads("c", uploads)
            seconds = time.perf_counter() - t0
            packed = sum(len(w) for (w,) in pipeline.catalog._db.rows("SELECT words FROM pages WHERE corpus = ?", "c"))
            catalog = pipeline.catalog
            pages = [p for d in catalog.documents.listed("c") for p in catalog.pages.stored("c", d.id)]
            as_json = sum(len(json.dumps([[x.text, [round(v, 5) for v in x.bbox]] for x in p.words],
                                         ensure_ascii=False)) for p in pages)
        finally:
            pipeline.close()
        data = settings.data_dir
        corpus = data / "corpora" / "c"
        return {"pages": job.pages_done, "seconds": seconds, "data": folder_bytes(data),
                "pages_dir": folder_bytes(corpus / "pages") if (corpus / "pages").exists() else 0,
                "sources_dir": folder_bytes(corpus / "sources") if (corpus / "sources").exists() else 0,
                "catalog": sum(p.stat().st_blocks * 512 for p in data.glob("catalog.sqlite3*")),
                **{f"top:{p.name}": folder_bytes(p) if p.is_dir() else p.stat().st_blocks * 512
                   for p in data.iterdir()},
                "words_packed": packed, "words_json": as_json}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--corpus", type=Path, nargs="*",
                    default=[SHARED / "docling" / "pdf", SHARED / "sec-10q" / "pdf"])
    ap.add_argument("--limit", type=int, default=13, help="files taken from each corpus folder")
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    files = [p for folder in args.corpus for p in sorted(folder.glob("*.pdf"))[: args.limit]]
    source = sum(p.stat().st_size for p in files)
    minilm = load_embedder("st:sentence-transformers/all-MiniLM-L6-v2")
    print(machine_line(), f"| {len(files)} PDFs, {source:,} bytes", flush=True)
    runs: dict[str, list[dict[str, float]]] = {arm: [] for arm in ARMS}
    for r in range(args.rounds):
        for arm in (ARMS if r % 2 == 0 else ARMS[::-1]):
            runs[arm].append(one_run(files, arm, minilm))
            x = runs[arm][-1]
            print(f"round {r + 1} {arm}: {x['pages']} pages {x['seconds']:.1f} s ratio {x['data'] / source:.2f} "
                  f"(pages {x['pages_dir']:,} sources {x['sources_dir']:,} catalog {x['catalog']:,}) "
                  + " ".join(f"{k[4:]}={int(v):,}" for k, v in x.items() if k.startswith("top:")), flush=True)
    values: dict[str, object] = {}
    for arm, xs in runs.items():
        values[f"ratio_{arm}"] = interval([x["data"] / source for x in xs])
        values[f"pages_per_s_{arm}"] = interval([x["pages"] / x["seconds"] for x in xs])
    last = runs["render"][-1]
    values["words_packed_bytes"] = int(last["words_packed"])
    values["words_json_bytes"] = int(last["words_json"])
    print(verdict("ratio_render", values["ratio_render"], 3.0, at_least=False))  # type: ignore[arg-type]
    print(result_line(values))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
