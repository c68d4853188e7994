"""Email (EML, RFC 822/MIME): the body becomes a document; each attachment its own document.

The body is the ``text/plain`` part (or the ``text/html`` one, made safe), preceded by the headers
people search by (From, To, Cc, Date, Subject). Attachments are counted before anything else is
done with them; more than ``max_email_attachments`` is refused.
"""

from __future__ import annotations

import email
import email.policy
import html
from email.message import EmailMessage
from pathlib import PurePath

from mmrag.config import IngestConfig
from mmrag.errors import TooLarge
from mmrag.ingest.convert.html_safe import sanitize_html
from mmrag.ingest.convert.text_render import PAGE_CSS

SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def parse_email(data: bytes) -> EmailMessage:
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


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


def email_body_html(data: bytes) -> str:
    """The message as one safe HTML page: the headers, then the body."""
    msg = parse_email(data)
    rows = "".join(f"<tr><th>{h}</th><td>{html.escape(str(msg[h]))}</td></tr>" for h in SHOWN_HEADERS if msg[h])
    body = msg.get_body(preferencelist=("plain", "html"))
    content = ""
    if body is not None:
        text = body.get_content()
        if body.get_content_subtype() == "html":
            content = sanitize_html(text)[0]
        else:
            content = "".join(f'<p style="white-space:pre-wrap">{html.escape(p)}</p>'
                              for p in text.split("\n\n") if p.strip())
    title = html.escape(str(msg["Subject"] or ""))
    return (f"<html><head><title>{title}</title><style>{PAGE_CSS}</style></head><body>"
            f"<table>{rows}</table>{content}</body></html>")
