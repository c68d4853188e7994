"""A suite's documents under other file names (``dataset.file_names``), judgments following them.

``hashed`` names each file by its content (``<first 16 hex digits of sha256>.pdf``), ``numbered``
like a downloads folder (``report (1).pdf``, ``report (2).pdf``, ... in the order of the contents'
hashes, so the numbers say nothing about the old names). The runner copies the files under their
new names into a scratch folder before ingest, so the one path works in-process and over REST and
nothing of the old name reaches the index (the ingested file *is* the renamed copy: same bytes, new
name). Judgments are written against the old names (patterns like ``*2023 Q3 AAPL*`` included) and
mapped to the new ones after they are expanded.
"""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Literal

from mmrag.errors import InvalidInput

FileNames = Literal["original", "hashed", "numbered"]
Judgments = dict[str, dict[str, int]]


def content_hash(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def new_names(files: list[Path], mode: FileNames) -> dict[str, str]:
    """Old basename -> new basename for ``files`` (identity for ``original``)."""
    if mode == "original":
        return {f.name: f.name for f in files}
    hashes = {f.name: content_hash(f) for f in files}
    if len(set(hashes.values())) != len(hashes):
        raise InvalidInput("two documents of the suite have the same bytes: they cannot be told apart by content")
    suffix = {f.name: f.suffix.lower() for f in files}
    if mode == "hashed":
        return {name: f"{digest[:16]}{suffix[name]}" for name, digest in hashes.items()}
    ordered = sorted(hashes, key=lambda name: hashes[name])
    return {name: f"report ({number}){suffix[name]}" for number, name in enumerate(ordered, start=1)}


def rename_key(key: str, names: dict[str, str]) -> str:
    """A judgment key (``name`` or ``name#page``) under the new name."""
    name, sep, page = key.rpartition("#") if "#" in key else (key, "", "")
    if name not in names:
        raise InvalidInput(f"judged document {name!r} is not among the suite's documents")
    return f"{names[name]}{sep}{page}"


def rename_judgments(judgments: Judgments, names: dict[str, str]) -> Judgments:
    return {qid: {rename_key(key, names): grade for key, grade in judged.items()} for qid, judged in judgments.items()}


def stage(files: list[Path], names: dict[str, str], folder: Path) -> list[Path]:
    """Copies of ``files`` under their new names in ``folder`` (a hard link where the file system allows),
    in the order of the new names (nothing of the old names' order either)."""
    folder.mkdir(parents=True, exist_ok=True)
    staged = []
    for file in sorted(files, key=lambda f: names[f.name]):  # ingested in the new names' order
        target = folder / names[file.name]
        target.unlink(missing_ok=True)
        try:
            target.hardlink_to(file)
        except OSError:  # another file system, or not allowed to link the file: copy it
            shutil.copyfile(file, target)
        staged.append(target)
    return staged
