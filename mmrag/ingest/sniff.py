"""What an upload really is, from its bytes; the extension only breaks ties.

Binary kinds are told by their signature (PDF, images, OLE compound files for legacy Office,
ZIP containers told apart by the entries they hold); text kinds (HTML, EML, RTF, Markdown,
CSV/TSV, plain text) by decoding as text and looking at the start, then the extension decides
between the ones the bytes cannot tell apart (``.md`` vs ``.txt`` vs ``.csv``). Bytes that are
neither a known signature nor text are refused, naming what the extension claimed.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass
from pathlib import PurePath

from mmrag.errors import CorruptDocument, UnsupportedMediaType


@dataclass(frozen=True, slots=True)
class Kind:
    name: str  # short name: pdf, png, docx, xlsx, odt, doc, html, md, txt, csv, eml, ...
    media_type: str  # IANA media type stored with the document
    family: str  # pdf | image | office | opendocument | epub | text | email


_K = [
    Kind("pdf", "application/pdf", "pdf"),
    Kind("png", "image/png", "image"), Kind("jpeg", "image/jpeg", "image"), Kind("webp", "image/webp", "image"),
    Kind("tiff", "image/tiff", "image"), Kind("bmp", "image/bmp", "image"), Kind("gif", "image/gif", "image"),
    Kind("docx", "application/vnd.openxmlformats-officedocument.wordprocessingml.document", "office"),
    Kind("docm", "application/vnd.ms-word.document.macroEnabled.12", "office"),
    Kind("pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation", "office"),
    Kind("pptm", "application/vnd.ms-powerpoint.presentation.macroEnabled.12", "office"),
    Kind("xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", "office"),
    Kind("xlsm", "application/vnd.ms-excel.sheet.macroEnabled.12", "office"),
    Kind("doc", "application/msword", "office"),
    Kind("ppt", "application/vnd.ms-powerpoint", "office"),
    Kind("xls", "application/vnd.ms-excel", "office"),
    Kind("rtf", "application/rtf", "office"),
    Kind("odt", "application/vnd.oasis.opendocument.text", "opendocument"),
    Kind("odp", "application/vnd.oasis.opendocument.presentation", "opendocument"),
    Kind("ods", "application/vnd.oasis.opendocument.spreadsheet", "opendocument"),
    Kind("epub", "application/epub+zip", "epub"),
    Kind("html", "text/html", "text"),
    Kind("md", "text/markdown", "text"),
    Kind("txt", "text/plain", "text"),
    Kind("csv", "text/csv", "text"),
    Kind("tsv", "text/tab-separated-values", "text"),
    Kind("eml", "message/rfc822", "email"),
]
KINDS: dict[str, Kind] = {k.name: k for k in _K}
BY_MEDIA_TYPE: dict[str, Kind] = {k.media_type: k for k in _K}
SPREADSHEETS = frozenset({"xlsx", "xlsm", "xls", "ods", "csv", "tsv"})

ACCEPTED = ("application/pdf, images (PNG, JPEG, WebP, TIFF, BMP, GIF), Word (DOCX, DOCM, DOC, RTF), PowerPoint "
            "(PPTX, PPT), Excel (XLSX, XLSM, XLS), OpenDocument (ODT, ODP, ODS), EPUB, HTML, Markdown, "
            "plain text, CSV/TSV, email (EML)")

_MAGIC = [
    (b"%PDF-", "pdf"), (b"\x89PNG\r\n\x1a\n", "png"), (b"\xff\xd8\xff", "jpeg"), (b"GIF87a", "gif"),
    (b"GIF89a", "gif"), (b"II*\x00", "tiff"), (b"MM\x00*", "tiff"), (b"{\\rtf", "rtf"),
]
_OLE = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
EXTENSIONS = {
    ".pdf": "pdf", ".png": "png", ".jpg": "jpeg", ".jpeg": "jpeg", ".webp": "webp", ".tif": "tiff",
    ".tiff": "tiff", ".bmp": "bmp", ".gif": "gif", ".docx": "docx", ".docm": "docm", ".pptx": "pptx",
    ".pptm": "pptm", ".xlsx": "xlsx", ".xlsm": "xlsm", ".doc": "doc", ".ppt": "ppt", ".xls": "xls",
    ".rtf": "rtf", ".odt": "odt", ".odp": "odp", ".ods": "ods", ".epub": "epub", ".html": "html",
    ".htm": "html", ".xhtml": "html", ".md": "md", ".markdown": "md", ".txt": "txt", ".text": "txt",
    ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".eml": "eml",
}
_ODF_MIMETYPES = {
    b"application/vnd.oasis.opendocument.text": "odt",
    b"application/vnd.oasis.opendocument.presentation": "odp",
    b"application/vnd.oasis.opendocument.spreadsheet": "ods",
    b"application/epub+zip": "epub",
}
_HEADER = re.compile(rb"^[A-Za-z][A-Za-z0-9-]{0,60}:[ \t]")
_EMAIL_HEADERS = {b"from", b"to", b"subject", b"date", b"message-id", b"mime-version", b"received", b"return-path"}


def claimed_kind(filename: str) -> str:
    return EXTENSIONS.get(PurePath(filename).suffix.lower(), "unknown")


def _refuse(filename: str, why: str) -> UnsupportedMediaType:
    return UnsupportedMediaType(
        f"{filename or 'file'}: {why} (extension says {claimed_kind(filename)}); allowed: {ACCEPTED}")


def _ole_kind(data: bytes, filename: str) -> str:
    """Legacy Office in an OLE compound file, told by its stream names (UTF-16LE in the directory)."""
    def has(name: str) -> bool:
        return name.encode("utf-16-le") in data
    if has("EncryptedPackage") or has("EncryptionInfo"):
        raise CorruptDocument(f"{filename or 'file'} is a password-protected (encrypted) Office document; "
                              "upload an unprotected copy", detail={"reason": "encrypted"})
    for stream, kind in (("WordDocument", "doc"), ("PowerPoint Document", "ppt"), ("Workbook", "xls"),
                         ("Book", "xls")):
        if has(stream):
            return kind
    raise _refuse(filename, "content is an OLE compound file that is not a Word, Excel or PowerPoint document")


def _zip_kind(data: bytes, filename: str) -> str:
    try:
        return _zip_entries_kind(data, filename)
    except (zipfile.BadZipFile, OSError, ValueError, EOFError, NotImplementedError, RuntimeError) as exc:
        raise CorruptDocument(f"{filename or 'file'} is a truncated or corrupt ZIP container ({exc}); "
                              "upload the complete file", detail={"reason": "truncated"}) from exc


def _zip_entries_kind(data: bytes, filename: str) -> str:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        names = set(zf.namelist())
        if "mimetype" in names:
            info = zf.getinfo("mimetype")
            if info.compress_type == zipfile.ZIP_STORED and info.file_size < 200:
                kind = _ODF_MIMETYPES.get(zf.read("mimetype").strip())
                if kind:
                    return kind
        if "[Content_Types].xml" in names:
            with zf.open("[Content_Types].xml") as f:
                types = f.read(65536)
            macro = b"macroEnabled" in types or any(n.endswith("vbaProject.bin") for n in names)
            for prefix, plain, with_macro in (("word/", "docx", "docm"), ("ppt/", "pptx", "pptm"),
                                              ("xl/", "xlsx", "xlsm")):
                if any(n.startswith(prefix) for n in names):
                    return with_macro if macro else plain
    raise _refuse(filename, "content is a ZIP archive that is not an Office, OpenDocument or EPUB file")


def _decode_text(data: bytes) -> str | None:
    """The bytes as text (UTF-8/UTF-16 with BOM, else UTF-8, else Latin-1 when nearly all printable)."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    head = data[:65536]
    if b"\x00" in head:
        return None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        text = data.decode("latin-1")
    sample = text[:65536]
    control = sum(1 for c in sample if (ord(c) < 32 and c not in "\t\r\n\f") or 0x7f <= ord(c) < 0xa0)
    return text if control <= len(sample) * 0.001 else None


def decode_text(data: bytes, filename: str = "") -> str:
    text = _decode_text(data)
    if text is None:
        raise _refuse(filename, "content is not text")
    return text


def _is_email(text: str) -> bool:
    lines = text[:8192].encode("utf-8", "replace").splitlines()
    names = set()
    for line in lines:
        if not line.strip():
            break
        if line[:1] in (b" ", b"\t"):
            continue  # folded header
        if not _HEADER.match(line):
            return False
        names.add(line.split(b":", 1)[0].lower())
    return len(names & _EMAIL_HEADERS) >= 2


_TEXT_KINDS = frozenset({"html", "md", "txt", "csv", "tsv", "eml", "unknown"})


def _text_kind(text: str, filename: str) -> str:
    start = text.lstrip()[:1024].lower()
    claimed = claimed_kind(filename)
    if claimed not in _TEXT_KINDS:
        raise _refuse(filename, "content is text, not the binary kind its extension names")
    if start.startswith(("<!doctype html", "<html", "<?xml")) and ("<html" in text[:4096].lower()):
        return "html"
    if claimed == "html" and "<" in start:
        return "html"
    if claimed in ("md", "csv", "tsv", "txt"):
        return claimed
    return "eml" if _is_email(text) else "txt"


def sniff_kind(data: bytes, filename: str = "") -> Kind:
    """The kind the bytes are. Raises UnsupportedMediaType (unknown bytes) or CorruptDocument
    (a truncated ZIP container, an encrypted Office file)."""
    head = data[:1024]
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return KINDS[name]
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return KINDS["webp"]
    if b"%PDF-" in head:  # PDFs may have junk before the header
        return KINDS["pdf"]
    if head.startswith(b"BM") and len(data) > 26 and int.from_bytes(data[2:6], "little") in (0, len(data)):
        return KINDS["bmp"]
    if head.startswith(_OLE):
        return KINDS[_ole_kind(data, filename)]
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return KINDS[_zip_kind(data, filename)]
    text = _decode_text(data)
    if text is None:
        raise _refuse(filename, "content is not a supported type (bytes match no known signature and are not text)")
    return KINDS[_text_kind(text, filename)]


_ANY = frozenset({"", "application/octet-stream", "binary/octet-stream", "application/x-download",
                  "application/download", "application/force-download", "application/unknown", "*/*"})
_OFFICE_TYPES = ("application/vnd.openxmlformats-officedocument.", "application/vnd.ms-", "application/msword",
                 "application/vnd.oasis.opendocument.", "application/zip", "application/x-zip-compressed",
                 "application/epub+zip", "application/rtf", "application/x-rtf")


def _declared_families(declared: str) -> frozenset[str] | None:
    """The kinds' families a declared media type admits; None when it says nothing we can hold the bytes to."""
    if declared in _ANY:
        return None
    if declared in ("application/pdf", "application/x-pdf"):
        return frozenset({"pdf"})
    if declared.startswith("image/"):
        return frozenset({"image"})
    if declared.startswith("text/"):
        return frozenset({"text", "email", "rtf"})
    if declared.startswith("message/"):
        return frozenset({"email", "text"})
    if declared.startswith(_OFFICE_TYPES):  # Windows sends CSV as application/vnd.ms-excel
        return frozenset({"office", "opendocument", "epub", "rtf", *({"text"} if "ms-excel" in declared else ())})
    return None


def check_declared_type(declared: str | None, data: bytes, filename: str = "") -> None:
    """Refuse (UnsupportedMediaType, 415) a file whose declared media type names a different kind of file
    than its bytes are (a part declared ``application/pdf`` holding JSON). Generic or unknown declarations
    (``application/octet-stream``, none) leave the bytes to decide; bytes that are no supported kind are
    left to the upload check, which refuses them itself."""
    media = (declared or "").split(";", 1)[0].strip().lower()
    families = _declared_families(media)
    if families is None:
        return
    try:
        kind = sniff_kind(data, filename)
    except (UnsupportedMediaType, CorruptDocument):
        return
    if kind.family in families or (kind.name == "rtf" and "rtf" in families):
        return
    raise UnsupportedMediaType(
        f"{filename or 'file'}: declared as {media} but its content is {kind.media_type} ({kind.name}); declare the "
        f"type the bytes are, or application/octet-stream to let the service tell; allowed: {ACCEPTED}",
        detail={"declared": media, "found": kind.media_type})
