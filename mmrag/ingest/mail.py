"""Email (EML, RFC 822/MIME): the body becomes a document; each attachment its own document.

The body is laid out as one page by the converter (``ingest/convert/mail_page.py``). Attachments are
counted before anything else is done with them; more than ``max_email_attachments`` is refused.
"""

from __future__ import annotations

from email.message import EmailMessage
from pathlib import PurePath

from mmrag.config import IngestConfig
from mmrag.errors import TooLarge
from mmrag.ingest.convert.mail_page import parse_email


def _attachments(msg: EmailMessage) -> list[EmailMessage]:
    return [p for p in msg.iter_attachments() if isinstance(p, EmailMessage)]


def check_email(data: bytes, name: str, config: IngestConfig) -> int:
    """The number of attachments; TooLarge when over the limit."""
    n = len(_attachments(parse_email(data)))
    if n > config.max_email_attachments:
        raise TooLarge(f"{name} has {n:,} attachments; the limit is {config.max_email_attachments:,} "
                       "(MMRAG_INGEST__MAX_EMAIL_ATTACHMENTS)", detail={"limit": "max_email_attachments"})
    return n


def email_attachments(data: bytes, name: str) -> list[tuple[str, bytes]]:
    """(file name, bytes) of each attachment, named ``<email>/<attachment>`` (numbered when unnamed)."""
    out = []
    for i, part in enumerate(_attachments(parse_email(data)), start=1):
        payload = part.get_payload(decode=True)
        if not isinstance(payload, bytes) or not payload:
            continue
        filename = PurePath(part.get_filename() or f"attachment-{i}").name
        out.append((f"{name}/{filename}", payload))
    return out
