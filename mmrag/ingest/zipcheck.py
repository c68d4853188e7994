"""Checks on a ZIP container (Office, OpenDocument, EPUB) before anything unpacks it.

Read from the central directory only (nothing is decompressed): the number of entries, the
total uncompressed size and each entry's compression ratio, so a zip bomb is refused before a
converter sees it. Then the first bytes of each XML part are read (bounded) to refuse document
type declarations: Office and OpenDocument XML never needs one, and entity expansion ("billion
laughs") needs one. A worksheet's row count is read from its ``<dimension>`` so a spreadsheet
that would render to a huge number of pages is refused up front.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, TooLarge

_XML = (".xml", ".rels", ".opf", ".xhtml", ".html", ".htm", ".ncx")
_ENTITIES = re.compile(rb"<!ENTITY|<!DOCTYPE[^>\[]*\[", re.IGNORECASE)  # entity declarations / internal subset
_ELEMENT = re.compile(rb"<[A-Za-z_]")  # the root element's start: the prolog ends here
_PROLOG_MAX = 65536
_DIMENSION = re.compile(rb'<(?:\w+:)?dimension\s+ref="[A-Z]*\d*:?[A-Z]*(\d+)"')
_SMALL = 1 << 20  # ratios of entries smaller than this (uncompressed) are not judged


@dataclass(frozen=True, slots=True)
class ZipSummary:
    entries: int  # files in the archive
    uncompressed: int  # sum of declared uncompressed sizes
    max_ratio: float  # largest uncompressed/compressed ratio among entries over 1 MiB
    sheet_rows: int  # largest row count declared by an XLSX worksheet (0 if none)


def _open(data: bytes, name: str) -> zipfile.ZipFile:
    try:
        return zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        raise CorruptDocument(f"{name} is a truncated or corrupt ZIP container ({exc}); upload the complete file",
                              detail={"reason": "truncated"}) from exc


def _check_entries(infos: list[zipfile.ZipInfo], name: str, config: IngestConfig) -> tuple[int, float]:
    if len(infos) > config.max_zip_entries:
        raise TooLarge(f"{name} holds {len(infos):,} entries; the limit is {config.max_zip_entries:,} "
                       "(MMRAG_INGEST__MAX_ZIP_ENTRIES)", detail={"limit": "max_zip_entries"})
    total = sum(i.file_size for i in infos)
    if total > config.max_unzipped_bytes:
        raise TooLarge(f"{name} unpacks to {total:,} bytes; the limit is {config.max_unzipped_bytes:,} "
                       "(MMRAG_INGEST__MAX_UNZIPPED_BYTES)", detail={"limit": "max_unzipped_bytes"})
    ratio = max((i.file_size / max(i.compress_size, 1) for i in infos if i.file_size >= _SMALL), default=0.0)
    if ratio > config.max_zip_ratio:
        raise TooLarge(f"{name} has an entry compressed {ratio:,.0f}:1; the limit is {config.max_zip_ratio:,.0f}:1 "
                       "(MMRAG_INGEST__MAX_ZIP_RATIO): a zip bomb", detail={"limit": "max_zip_ratio"})
    if any(i.flag_bits & 0x1 for i in infos):
        raise CorruptDocument(f"{name} has encrypted (password-protected) entries; upload an unprotected copy",
                              detail={"reason": "encrypted"})
    return total, ratio


def _head(zf: zipfile.ZipFile, info: zipfile.ZipInfo, size: int, name: str) -> bytes:
    try:
        with zf.open(info) as f:
            return f.read(size)
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise CorruptDocument(f"{name}: entry {info.filename} cannot be read ({exc})",
                              detail={"reason": "corrupt"}) from exc


def _check_prolog(head: bytes, part: str, name: str) -> None:
    root = _ELEMENT.search(head)
    if root is None and len(head) >= _PROLOG_MAX:
        raise CorruptDocument(f"{name}: {part} has no root element in its first {_PROLOG_MAX:,} bytes",
                              detail={"reason": "xml_prolog"})
    if _ENTITIES.search(head[: root.start() if root else len(head)]):
        raise CorruptDocument(
            f"{name}: {part} declares XML entities (<!ENTITY or an internal DTD subset); Office, OpenDocument "
            "and EPUB XML never needs them and entity expansion is refused (XML bomb)",
            detail={"reason": "xml_entities"})


def check_zip(data: bytes, name: str, config: IngestConfig) -> ZipSummary:
    """Raise TooLarge/CorruptDocument for a container that must not be unpacked; else summarise it."""
    with _open(data, name) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        total, ratio = _check_entries(infos, name, config)
        rows = 0
        for info in infos:
            lower = info.filename.lower()
            if not lower.endswith(_XML):
                continue
            head = _head(zf, info, _PROLOG_MAX, name)
            _check_prolog(head, info.filename, name)
            if lower.startswith("xl/worksheets/") and (m := _DIMENSION.search(head)):
                rows = max(rows, int(m.group(1)))
    if rows > config.max_sheet_rows:
        raise TooLarge(f"{name} has a worksheet of {rows:,} rows; the limit is {config.max_sheet_rows:,} "
                       "(MMRAG_INGEST__MAX_SHEET_ROWS)", detail={"limit": "max_sheet_rows"})
    return ZipSummary(len(infos), total, ratio, rows)
