"""An e-mail's body as one safe HTML page (the headers people search by, then the ``text/plain`` part, or
the ``text/html`` one made safe): what the converter lays out for an EML file. The rest of e-mail
handling (attachments as documents of their own, their limit) is ``ingest/mail.py``."""

from __future__ import annotations

import email
import email.policy
import html
from email.message import EmailMessage

from mmrag.ingest.convert.html_safe import sanitize_html
from mmrag.ingest.convert.text_render import PAGE_CSS

SHOWN_HEADERS = ("From", "To", "Cc", "Date", "Subject")


def parse_email(data: bytes) -> EmailMessage:
    msg = email.message_from_bytes(data, policy=email.policy.default)
    assert isinstance(msg, EmailMessage)
    return msg


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
