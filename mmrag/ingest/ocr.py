"""OCR with Tesseract (Debian ``tesseract-ocr``): orientation, then words with boxes.

Orientation detection (``--psm 0``) runs first; a page scanned at 90/180/270 degrees is
turned upright before it is read, and the caller gets the angle so that the stored page
image is turned the same way (boxes are normalised to the upright image).

Tesseract runs on one thread (``OMP_THREAD_LIMIT=1``): its OpenMP threads spin against the embedder's
torch threads on a small CPU box, and a page at a time gains little from them (docs/benchmarks.md).
"""

from __future__ import annotations

import csv
import io
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

from PIL import Image

from mmrag.errors import Unavailable
from mmrag.types import Word


def _tesseract(img: Image.Image, args: list[str], timeout_s: float) -> subprocess.CompletedProcess[bytes]:
    exe = shutil.which("tesseract")
    if exe is None:
        raise Unavailable("OCR needs Tesseract: install the Debian package tesseract-ocr (README)")
    with tempfile.TemporaryDirectory(prefix="mmrag-ocr-") as tmp:
        path = Path(tmp) / "page.png"
        img.save(path, format="PNG", compress_level=1)
        return subprocess.run([exe, str(path), "-", *args], capture_output=True, timeout=timeout_s, check=False,
                              env={**os.environ, "OMP_THREAD_LIMIT": "1"})


def detect_rotation(img: Image.Image, *, min_confidence: float = 1.0, timeout_s: float = 60.0) -> int:
    """Clockwise degrees (0/90/180/270) that turn the page upright; 0 when unsure."""
    proc = _tesseract(img, ["--psm", "0"], timeout_s)
    out = (proc.stdout + proc.stderr).decode(errors="replace")
    rotate = re.search(r"Rotate:\s*(\d+)", out)
    conf = re.search(r"Orientation confidence:\s*([\d.]+)", out)
    if proc.returncode != 0 or not rotate or not conf or float(conf.group(1)) < min_confidence:
        return 0
    return int(rotate.group(1)) % 360


def upright(img: Image.Image, rotation: int) -> Image.Image:
    """Turn ``img`` clockwise by ``rotation`` degrees."""
    return img.rotate(-rotation, expand=True) if rotation else img


def ocr_image(img: Image.Image, *, languages: str = "eng", timeout_s: float = 120.0) -> list[Word]:
    """Words of an upright image with normalised boxes, in reading order."""
    proc = _tesseract(img, ["-l", languages, "--psm", "3", "tsv"], timeout_s)
    if proc.returncode != 0:
        raise Unavailable(f"tesseract failed: {proc.stderr.decode(errors='replace')[-300:]}")
    return parse_tsv(proc.stdout.decode("utf-8", errors="replace"), img.width, img.height)


def parse_tsv(tsv: str, width: int, height: int) -> list[Word]:
    """Tesseract TSV (level 5 rows are words) to normalised words."""
    words: list[Word] = []
    for row in csv.DictReader(io.StringIO(tsv), delimiter="\t", quoting=csv.QUOTE_NONE):
        text = (row.get("text") or "").strip()
        if row.get("level") != "5" or not text:
            continue
        left, top = int(row["left"]), int(row["top"])
        w, h = int(row["width"]), int(row["height"])
        box = (left / width, top / height, (left + w) / width, (top + h) / height)
        words.append(Word(text=text, bbox=tuple(min(max(v, 0.0), 1.0) for v in box), confidence=float(row["conf"])))  # type: ignore[arg-type]
    return words
