"""The int8 text model's kernels on a CPU without VNNI, run here by emulating one: cosine to float32 of
the u8s8 kernels (ONNX Runtime's default) and the u8u8 kernels (``session.x64quantprecision``, what
:mod:`mmrag.cpu_kernels` chooses there), against this machine's own kernels.

ONNX Runtime picks its kernels from the ``cpuid`` instruction. ``qemu-x86_64 -cpu EPYC-Rome`` (Debian's
``qemu-user``) runs the same Python, ONNX Runtime and model file on an emulated AVX2-only AMD EPYC: no
AVX-512, no VNNI, the processor of the owners' failing CI run. The emulation is exact in its integer
arithmetic (``vpmaddubsw`` saturates as the silicon does) and says nothing about speed: only the
vectors are compared. Arms, each over the same page texts, the same int8 file and the same pooling:

- ``native_u8s8`` / ``native_u8u8``: this machine (with VNNI, its u8s8 kernels are exact);
- ``avx2_u8s8`` / ``avx2_u8u8``: the emulated AVX2 CPU.

Per arm: cosine of each page's vector to sentence-transformers' float32 one (median with its 95 %
interval over pages, 1st percentile, minimum), and the largest difference to ``native_u8s8`` (exact
kernels agree to float rounding). Deterministic: a rerun prints the same figures.

    python -m bench.int8_kernels [--pages 120] [--cpu EPYC-Rome]

ends with ``RESULT cos_median_<arm>=.. cos_p1_<arm>=.. cos_min_<arm>=.. maxdiff_<arm>=..``.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench._stats import interval, machine_line, result_line

SPEC = "st:sentence-transformers/all-MiniLM-L6-v2"
U8U8 = ("session.x64quantprecision", "1")


def run_model(model: Path, inputs: Path, out: Path, u8u8: bool) -> None:
    """The child: the int8 file over the saved padded batches, mean-pooled and normalised, to ``out``."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 2
    if u8u8:
        opts.add_session_config_entry(*U8U8)
    session = ort.InferenceSession(str(model), opts, providers=["CPUExecutionProvider"])
    saved = np.load(inputs)
    names = [i.name for i in session.get_inputs()]
    vectors = []
    for b in range(int(saved["batches"])):
        feed = {n: saved[f"{n}_{b}"] for n in names}
        hidden = session.run(None, feed)[0]  # (B, T, H)
        mask = feed["attention_mask"][..., None].astype(np.float32)
        pooled = (hidden * mask).sum(axis=1) / np.clip(mask.sum(axis=1), 1e-9, None)
        vectors.append(pooled / np.linalg.norm(pooled, axis=1, keepdims=True))
    np.save(out, np.concatenate(vectors))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pages", type=int, default=120)
    ap.add_argument("--batch", type=int, default=16)
    ap.add_argument("--cpu", default="EPYC-Rome", help="qemu CPU model to emulate (qemu-x86_64 -cpu help)")
    ap.add_argument("--child", nargs=3, metavar=("MODEL", "INPUTS", "OUT"), help=argparse.SUPPRESS)
    ap.add_argument("--u8u8", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        run_model(*(Path(p) for p in args.child), u8u8=args.u8u8)
        return
    qemu = shutil.which("qemu-x86_64")
    if qemu is None:
        sys.exit("needs qemu-x86_64 (Debian: apt-get install qemu-user)")
    from bench.embed_precision import page_texts
    from mmrag.embed.base import EmbedderOptions, load_embedder
    from mmrag.embed.features import collate_rows
    from mmrag.embed.sentence import SentenceEmbedder

    print(machine_line(), flush=True)
    texts = page_texts(args.pages)
    reference = load_embedder(SPEC, EmbedderOptions(device="cpu", text_precision="float32"))
    int8 = load_embedder(SPEC, EmbedderOptions(device="cpu", text_precision="int8", int8_kernels="u8s8"))
    assert isinstance(reference, SentenceEmbedder) and isinstance(int8, SentenceEmbedder) and int8.int8
    expected = np.stack(reference.embed_batch(texts))
    with tempfile.TemporaryDirectory(prefix="int8-kernels-") as tmp:
        inputs, rows = Path(tmp) / "inputs.npz", int8.prepare(texts)
        arrays: dict[str, np.ndarray] = {}
        batches = [rows[i: i + args.batch] for i in range(0, len(rows), args.batch)]
        for b, chunk in enumerate(batches):
            batch = collate_rows(chunk, pad_values={"input_ids": int8.model.tokenizer.pad_token_id or 0},
                                 padding_side=int8.model.tokenizer.padding_side)
            for name in int8.int8.names:
                arrays[f"{name}_{b}"] = np.ascontiguousarray(batch[name].numpy(), dtype=np.int64)
        np.savez(inputs, batches=len(batches), **arrays)
        vectors: dict[str, np.ndarray] = {}
        for arm in ("native_u8s8", "native_u8u8", "avx2_u8s8", "avx2_u8u8"):
            out = Path(tmp) / f"{arm}.npy"
            command = [sys.executable, "-m", "bench.int8_kernels", "--child", str(int8.int8.path), str(inputs),
                       str(out), *(["--u8u8"] if arm.endswith("u8u8") else [])]
            if arm.startswith("avx2"):
                command = [qemu, "-cpu", args.cpu, *command]
            t0 = time.perf_counter()
            subprocess.run(command, check=True, stderr=subprocess.DEVNULL, cwd=Path(__file__).resolve().parent.parent)
            vectors[arm] = np.load(out)
            print(f"{arm}: {len(vectors[arm])} pages in {time.perf_counter() - t0:.0f} s", flush=True)
    values: dict[str, object] = {"pages": len(texts), "emulated_cpu": args.cpu}
    for arm, v in vectors.items():
        cos = (v * expected).sum(axis=1)
        values[f"cos_median_{arm}"] = interval(list(cos))
        values[f"cos_p1_{arm}"] = float(np.percentile(cos, 1))
        values[f"cos_min_{arm}"] = float(cos.min())
        values[f"maxdiff_{arm}"] = float(np.abs(v - vectors["native_u8s8"]).max())
        print(f"{arm}: cosine to float32 median {np.median(cos):.5f} p1 {np.percentile(cos, 1):.5f} "
              f"min {cos.min():.5f}; largest difference to native_u8s8 {values[f'maxdiff_{arm}']:.2e}", flush=True)
    print(machine_line())
    print(result_line(values, digits=5))  # type: ignore[arg-type]


if __name__ == "__main__":
    main()
