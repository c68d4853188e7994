"""MuPDF's errors for a file it cannot read, as the CorruptDocument (422) they are.

MuPDF raises its format and syntax errors wherever it meets the damage: when the file is opened,
when a page is loaded (a page tree with a cycle: ``FzErrorFormat: code=7: cycle in page tree``),
when a page's content is read. Whatever code met one, :func:`corrupt_document` tells it from a bug
of ours, so the file fails as ``corrupt_document`` saying what MuPDF found, not as ``internal_error``.
"""

from __future__ import annotations

import pymupdf

from mmrag.errors import CorruptDocument

_MUPDF = getattr(pymupdf, "mupdf", None)
FORMAT_ERRORS: tuple[type[BaseException], ...] = tuple(
    cls for cls in (getattr(_MUPDF, "FzErrorFormat", None), getattr(_MUPDF, "FzErrorSyntax", None),
                    getattr(pymupdf, "FileDataError", None))
    if isinstance(cls, type) and issubclass(cls, BaseException))


def corrupt_document(exc: BaseException) -> CorruptDocument | None:
    """The CorruptDocument ``exc`` stands for when it (or what caused it) is a MuPDF format or syntax
    error; None for any other error."""
    seen: BaseException | None = exc
    for _ in range(4):  # the error and the ones it was raised from
        if seen is None:
            return None
        if isinstance(seen, FORMAT_ERRORS):
            return _corrupt(seen)
        seen = seen.__cause__ or seen.__context__
    return None


def _corrupt(exc: BaseException) -> CorruptDocument:
    text = " ".join(str(exc).split())[:200] or type(exc).__name__
    return CorruptDocument(f"the PDF is damaged: MuPDF cannot read it ({text}); upload a valid PDF (re-save or "
                           "print it to PDF)", detail={"reason": "format"})
