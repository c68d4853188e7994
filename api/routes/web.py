"""The web page for people: ``/`` (index.html) and its static assets under ``/static/``.

The files live in the package (``mmrag/web/``, no build step). They are served without an API
key (they hold no data: the page asks for a key when the API answers 401) and with
``Cache-Control: no-cache`` plus an ETag, so a browser revalidates and never runs a stale script.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, Response

from mmrag.errors import NotFound

router = APIRouter(tags=["web"])
WEB_DIR = Path(str(files("mmrag") / "web"))
CONTENT_TYPES = {".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8",
                 ".css": "text/css; charset=utf-8", ".svg": "image/svg+xml", ".png": "image/png"}
# The page talks only to this origin and shows images it fetched itself (blob: URLs).
POLICY = ("default-src 'self'; img-src 'self' blob: data:; style-src 'self'; script-src 'self'; "
          "connect-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
HEADERS = {"Cache-Control": "no-cache", "X-Content-Type-Options": "nosniff", "Content-Security-Policy": POLICY,
           "Referrer-Policy": "no-referrer"}


def _asset(name: str, request: Request) -> Response:
    """The file with its content type; 304 when the browser's copy (ETag) is current."""
    path = WEB_DIR / name
    media_type = CONTENT_TYPES.get(path.suffix)
    if "/" in name or name.startswith(".") or media_type is None or not path.is_file():
        raise NotFound(f"no static file {name!r}; the page's files are: "
                       f"{sorted(p.name for p in WEB_DIR.iterdir() if p.suffix in CONTENT_TYPES)}")
    response = FileResponse(path, media_type=media_type, headers=HEADERS, stat_result=path.stat())
    if request.headers.get("if-none-match") == response.headers["etag"]:
        return Response(status_code=304, headers={**HEADERS, "etag": response.headers["etag"]})
    return response


@router.api_route("/", methods=["GET", "HEAD"], response_class=FileResponse, include_in_schema=False)
def index(request: Request) -> Response:
    """The single page (corpora, upload, documents, search, answers, evaluations)."""
    return _asset("index.html", request)


@router.api_route("/static/{name}", methods=["GET", "HEAD"], response_class=FileResponse, include_in_schema=False)
def static(name: str, request: Request) -> Response:
    """A file of the page (JavaScript modules, CSS)."""
    return _asset(name, request)
