"""Office and OpenDocument files to PDF with LibreOffice headless (Debian ``libreoffice-*-nogui``).

Each conversion gets a fresh private profile (``-env:UserInstallation``) whose settings disable
macros (security level "very high" and ``DisableMacrosExecution``), so a DOCM/XLSM/ODT with macros is
converted and its macros never run; headless ``--convert-to`` opens the file without any dialog.
The export is bounded by a page range (``max_pages + 1`` pages: one more tells "too many pages").
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, Unavailable
from mmrag.ingest.convert.sandbox import Limits, run_limited

_FILTERS = {
    "writer_pdf_Export": ("doc", "docx", "docm", "odt", "rtf", "txt", "html"),
    "impress_pdf_Export": ("ppt", "pptx", "pptm", "odp"),
    "calc_pdf_Export": ("xls", "xlsx", "xlsm", "ods", "csv", "tsv"),
}
FILTER_OF = {kind: f for f, kinds in _FILTERS.items() for kind in kinds}

_SCRIPTING = "/org.openoffice.Office.Common/Security/Scripting"


def _xcu(settings: list[tuple[str, str, str]]) -> str:
    items = "".join(f'<item oor:path="{path}"><prop oor:name="{name}" oor:op="fuse"><value>{value}</value></prop>'
                    "</item>\n" for path, name, value in settings)
    return ('<?xml version="1.0" encoding="UTF-8"?>\n<oor:items xmlns:oor="http://openoffice.org/2001/registry" '
            'xmlns:xs="http://www.w3.org/2001/XMLSchema" xmlns:xsi="http://www.w3.org/2001/XMLSchema-instance">\n'
            f"{items}</oor:items>\n")


def soffice() -> str:
    exe = shutil.which("soffice") or shutil.which("libreoffice")
    if exe is None:
        raise Unavailable("converting Office files needs LibreOffice: install the Debian packages "
                          "libreoffice-writer-nogui, libreoffice-calc-nogui, libreoffice-impress-nogui (README)")
    return exe


def write_profile(root: Path, macros: bool = False) -> Path:
    """A fresh LibreOffice user profile under ``root``: macros disabled (``macros=True`` only for the
    test that proves a macro would otherwise run)."""
    user = root / "profile" / "user"
    user.mkdir(parents=True)
    settings = [(_SCRIPTING, "MacroSecurityLevel", "0" if macros else "3"),
                (_SCRIPTING, "DisableMacrosExecution", "false" if macros else "true"),
                (_SCRIPTING, "BlockUntrustedRefererLinks", "true"),
                ("/org.openoffice.Office.Common/Misc", "UseLocking", "false")]
    (user / "registrymodifications.xcu").write_text(_xcu(settings))
    return root / "profile"


def convert_argv(src: Path, outdir: Path, profile: Path, kind: str, max_pages: int) -> list[str]:
    export = {"PageRange": {"type": "string", "value": f"1-{max_pages + 1}"}}
    return [soffice(), f"-env:UserInstallation={profile.as_uri()}", "--headless", "--invisible", "--norestore",
            "--nologo", "--nolockcheck", "--nodefault", "--convert-to",
            f"pdf:{FILTER_OF[kind]}:{json.dumps(export, separators=(',', ':'))}", "--outdir", str(outdir), str(src)]


def libreoffice_pdf(data: bytes, kind: str, config: IngestConfig, *, macros: bool = False) -> bytes:
    """PDF bytes of an Office/OpenDocument/RTF file (``kind`` as sniffed)."""
    with tempfile.TemporaryDirectory(prefix="mmrag-lo-") as tmp:
        root = Path(tmp)
        src = root / f"input.{kind}"
        src.write_bytes(data)
        profile = write_profile(root, macros)
        limits = Limits(config.convert_timeout_s, config.convert_memory_bytes, f"converting the {kind} file")
        proc = run_limited(convert_argv(src, root / "out", profile, kind, config.max_pages), limits, root)
        out = root / "out" / "input.pdf"
        if not out.exists() or out.stat().st_size == 0:
            lines = (proc.stderr + proc.stdout).decode(errors="replace").splitlines()
            tail = " ".join(x for x in lines if x.strip() and "javaldx" not in x)[-300:]
            raise CorruptDocument(f"the {kind} file could not be converted (corrupt, truncated or password-protected?)"
                                  f": LibreOffice exited {proc.returncode}: {tail}", detail={"reason": "conversion"})
        return out.read_bytes()
