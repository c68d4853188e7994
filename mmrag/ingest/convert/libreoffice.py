"""Office and OpenDocument files to PDF with LibreOffice headless (Debian ``libreoffice-*-nogui``).

It runs in the converter jail (:mod:`mmrag.ingest.convert.sandbox`): it reads its install, the fonts
and its input copy, writes only its job folder, and has no network, so a field or link that names
another file (``INCLUDEPICTURE``, a linked image, an OLE link) finds nothing to include. Each
conversion gets a fresh private profile (``-env:UserInstallation``) whose settings disable macros
(security level "very high" and ``DisableMacrosExecution``), so a DOCM/XLSM/ODT with macros is
converted and its macros never run; headless ``--convert-to`` opens the file without any dialog.
The export is bounded by a page range (``max_pages + 1`` pages: one more tells "too many pages").
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from mmrag.config import IngestConfig
from mmrag.errors import CorruptDocument, Unavailable
from mmrag.ingest.convert.sandbox import JobFolder, Limits, job_folder, run_converter

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


def install_reads() -> list[Path]:
    """What LibreOffice reads besides /usr: its configuration under /etc and /var/lib (Debian links
    ``share/registry`` and ``share/prereg`` there), and its install when it lives elsewhere (/opt)."""
    program = Path(soffice()).resolve().parent
    return [Path("/etc/libreoffice"), Path("/var/lib/libreoffice"), program.parent]


def write_profile(folder: Path, macros: bool = False) -> Path:
    """A fresh LibreOffice user profile under ``folder``: macros disabled (``macros=True`` only for the
    test that proves a macro would otherwise run)."""
    user = folder / "profile" / "user"
    user.mkdir(parents=True)
    settings = [(_SCRIPTING, "MacroSecurityLevel", "0" if macros else "3"),
                (_SCRIPTING, "DisableMacrosExecution", "false" if macros else "true"),
                (_SCRIPTING, "BlockUntrustedRefererLinks", "true"),
                ("/org.openoffice.Office.Common/Misc", "UseLocking", "false")]
    (user / "registrymodifications.xcu").write_text(_xcu(settings))
    return folder / "profile"


def convert_argv(src: Path, outdir: Path, profile: Path, kind: str, max_pages: int) -> list[str]:
    export = {"PageRange": {"type": "string", "value": f"1-{max_pages + 1}"}}
    return [soffice(), f"-env:UserInstallation={profile.as_uri()}", "--headless", "--invisible", "--norestore",
            "--nologo", "--nolockcheck", "--nodefault", "--convert-to",
            f"pdf:{FILTER_OF[kind]}:{json.dumps(export, separators=(',', ':'))}", "--outdir", str(outdir), str(src)]


def _profile(folder: JobFolder, macros: bool) -> Path:
    """The profile, owned by the converter (it writes there): its path as the converter sees it."""
    write_profile(folder.outside, macros)
    folder.own("profile")
    return folder.inside / "profile"


def libreoffice_pdf(data: bytes, kind: str, config: IngestConfig, *, macros: bool = False) -> bytes:
    """PDF bytes of an Office/OpenDocument/RTF file (``kind`` as sniffed), converted in the jail."""
    what = f"converting the {kind} file"
    with job_folder(config.convert_isolation, config.convert_dir, "mmrag-lo-") as folder:
        src = folder.put(f"input.{kind}", data)
        profile = _profile(folder, macros)
        out = folder.mkdir("out")
        limits = Limits(config.convert_timeout_s, config.convert_memory_bytes, what)
        proc = run_converter(convert_argv(src, out, profile, kind, config.max_pages), limits, folder,
                             config.convert_isolation, reads=install_reads())
        pdf = folder.read("out/input.pdf")
        if not pdf:
            lines = (proc.stderr + proc.stdout).decode(errors="replace").splitlines()
            tail = " ".join(x for x in lines if x.strip() and "javaldx" not in x)[-300:]
            raise CorruptDocument(f"the {kind} file could not be converted (corrupt, truncated or password-protected?)"
                                  f": LibreOffice exited {proc.returncode}: {tail}", detail={"reason": "conversion"})
        return pdf
