"""Checks on a ZIP container (Office, OpenDocument, EPUB) before anything unpacks it for a converter.

First the central directory (nothing decompressed): the number of entries, the total uncompressed
size and each entry's compression ratio, so a zip bomb is refused before a converter sees it. Then
**every** entry whose bytes start like XML (whatever its name) is parsed, streamed, by expat, in the
encoding its BOM or declaration gives (UTF-8, UTF-16, ...; one expat cannot read is refused, so no
part is read one way here and another way by the converter):

* a document type declaration with an internal subset, or any entity declaration, is refused
  (Office, OpenDocument and EPUB XML never needs one; entity expansion is the "billion laughs" bomb);
* rows are **counted**, never read from a ``<dimension>``: OOXML ``row`` elements in any part (or
  the highest row number one names), ODF ``table:table-row`` elements times their
  ``number-rows-repeated`` when they hold content;
* Office and OpenDocument parts go through the reference rules of
  :mod:`mmrag.ingest.convert.references` (fields and links that include other files) and OOXML parts
  through those of :mod:`mmrag.ingest.convert.vml_links` (VML and picture references, judged once
  every part is read);
* an Office or OpenDocument part that is not well-formed XML is refused (its converter could read
  it differently); an EPUB's XHTML may be sloppy (MuPDF's HTML parser reads it).
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from typing import Protocol
from xml.parsers import expat

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, InvalidInput, TooLarge
from mmrag.ingest.convert.references import OdfRules, OoxmlRules, StartOnly
from mmrag.ingest.convert.vml_links import PackageLinks, VmlRules

_SMALL = 1 << 20  # ratios of entries smaller than this (uncompressed) are not judged
_CHUNK = 1 << 20
_XML_START = re.compile(rb"^(?:\xef\xbb\xbf|\xff\xfe|\xfe\xff)?(?:[ \t\r\n]|\x00[ \t\r\n]|[ \t\r\n]\x00)*(?:<|\x00<)")
_SML_ROWS = frozenset({"http://schemas.openxmlformats.org/spreadsheetml/2006/main row",
                       "http://purl.oclc.org/ooxml/spreadsheetml/main row"})
_TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0"
_OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0"


@dataclass(frozen=True, slots=True)
class ZipSummary:
    entries: int  # files in the archive
    uncompressed: int  # sum of declared uncompressed sizes
    max_ratio: float  # largest uncompressed/compressed ratio among entries over 1 MiB
    sheet_rows: int  # most rows counted in one worksheet or table (0 if none)


class Rules(Protocol):
    def start(self, tag: str, attrs: dict[str, str]) -> None: ...
    def end(self, tag: str) -> None: ...
    def chars(self, text: str) -> None: ...
    def close(self) -> None: ...


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


class _SheetRows(StartOnly):
    """OOXML worksheet rows of one part: its ``row`` elements counted, or the highest row number one of
    them names (``r``), whichever is more (a sheet spans to its last row)."""

    def __init__(self) -> None:
        self.rows = 0
        self.count = 0

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if tag in _SML_ROWS:
            self.count += 1
            number = attrs.get("r", "").strip()
            self.rows = max(self.rows, self.count, int(number) if number.isdigit() and len(number) < 12 else 0)


class _OdfRows:
    """ODF table rows: a row counts ``number-rows-repeated`` times when one of its cells holds something."""

    def __init__(self) -> None:
        self.rows = 0
        self.table = 0  # rows of the table being read
        self.repeat = 0  # of the open row (0: none open)
        self.filled = False

    def start(self, tag: str, attrs: dict[str, str]) -> None:
        if tag == f"{_TABLE} table":
            self.table = 0
        elif tag == f"{_TABLE} table-row":
            value = attrs.get(f"{_TABLE} number-rows-repeated", "1").strip()
            self.repeat, self.filled = (int(value) if value.isdigit() else 1), False
        elif self.repeat and f"{_OFFICE} value-type" in attrs:
            self.filled = True

    def end(self, tag: str) -> None:
        if tag == f"{_TABLE} table-row":
            self.table += self.repeat if self.filled else 0
            self.rows = max(self.rows, self.table)
            self.repeat = 0

    def chars(self, text: str) -> None:
        if self.repeat and text.strip():
            self.filled = True

    def close(self) -> None:
        pass


class _Part:
    """One XML entry parsed by expat, streamed: DTD refusals, then every handler sees each element."""

    def __init__(self, name: str, part: str, handlers: list[Rules]) -> None:
        self.name, self.part, self.handlers = name, part, handlers
        self.parser = expat.ParserCreate(namespace_separator=" ")
        self.parser.buffer_text = True
        self.parser.StartDoctypeDeclHandler = self._doctype
        self.parser.EntityDeclHandler = self._entity
        if handlers:
            self.parser.StartElementHandler = self._start
            self.parser.EndElementHandler = self._end
            self.parser.CharacterDataHandler = self._chars

    def _doctype(self, _name: str, _sys: str | None, _pub: str | None, internal: int) -> None:
        if internal:
            raise self._entities()

    def _entity(self, *_args: object) -> None:
        raise self._entities()

    def _entities(self) -> CorruptDocument:
        return CorruptDocument(
            f"{self.name}: {self.part} declares XML entities (<!ENTITY or an internal DTD subset); Office, "
            "OpenDocument and EPUB XML never needs them and entity expansion is refused (XML bomb)",
            detail={"reason": "xml_entities"})

    def _start(self, tag: str, attrs: dict[str, str]) -> None:
        for h in self.handlers:
            h.start(tag, attrs)

    def _end(self, tag: str) -> None:
        for h in self.handlers:
            h.end(tag)

    def _chars(self, text: str) -> None:
        for h in self.handlers:
            h.chars(text)

    def feed(self, chunk: bytes, final: bool = False) -> None:
        self.parser.Parse(chunk, final)
        if final:
            for h in self.handlers:
                h.close()


def _container(zf: zipfile.ZipFile) -> str:
    """ooxml | odf | epub (as sniff tells them: the stored mimetype, or the OOXML folders)."""
    names = set(zf.namelist())
    if "mimetype" in names:
        mimetype = zf.read("mimetype")[:200].strip()
        if mimetype == b"application/epub+zip":
            return "epub"
        if mimetype.startswith(b"application/vnd.oasis.opendocument"):
            return "odf"
    return "ooxml"


def _handlers(container: str, name: str, part: str,
              links: PackageLinks) -> tuple[list[Rules], _SheetRows | _OdfRows | None]:
    if container == "ooxml":
        sheet = _SheetRows()
        return [OoxmlRules(name, part), VmlRules(name, part, links), sheet], sheet
    if container == "odf":
        table = _OdfRows()
        return [OdfRules(name, part), table], table
    return [], None


def _scan(zf: zipfile.ZipFile, info: zipfile.ZipInfo, name: str, container: str, max_rows: int,
          links: PackageLinks) -> int:
    """Parse one entry if its bytes start like XML; the rows counted in it (stops past ``max_rows``)."""
    counter = None
    try:
        with zf.open(info) as f:
            chunk = f.read(4096)
            if not _XML_START.match(chunk):
                return 0
            handlers, counter = _handlers(container, name, info.filename, links)
            part = _Part(name, info.filename, handlers)
            while chunk:
                part.feed(chunk)
                if counter is not None and counter.rows > max_rows:
                    return counter.rows
                chunk = f.read(_CHUNK)
            part.feed(b"", final=True)
    except expat.ExpatError as exc:
        if container != "epub" or "encoding" in str(exc):
            raise CorruptDocument(f"{name}: {info.filename} is not XML its converter would read the same way "
                                  f"({exc}); upload the file as its application saves it",
                                  detail={"reason": "xml"}) from exc
    except (zipfile.BadZipFile, OSError, EOFError, ValueError, NotImplementedError, RuntimeError) as exc:
        raise CorruptDocument(f"{name}: entry {info.filename} cannot be read ({exc})",
                              detail={"reason": "corrupt"}) from exc
    return counter.rows if counter is not None else 0


def check_zip(data: bytes, name: str, config: IngestConfig) -> ZipSummary:
    """Raise TooLarge/CorruptDocument/InvalidInput for a container that must not be unpacked; else summarise it."""
    with _open(data, name) as zf:
        infos = [i for i in zf.infolist() if not i.is_dir()]
        total, ratio = _check_entries(infos, name, config)
        container = _container(zf)
        rows, links = 0, PackageLinks(name)
        for info in infos:
            rows = max(rows, _scan(zf, info, name, container, config.max_sheet_rows, links))
            if rows > config.max_sheet_rows:
                raise TooLarge(f"{name} has a worksheet of {rows:,} rows or more (counted in {info.filename}, "
                               f"not read from its <dimension>); the limit is {config.max_sheet_rows:,} "
                               "(MMRAG_INGEST__MAX_SHEET_ROWS)",
                               detail={"limit": "max_sheet_rows"})
        links.check()
    return ZipSummary(len(infos), total, ratio, rows)


__all__ = ["InvalidInput", "ZipSummary", "check_zip"]
