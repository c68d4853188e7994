"""Documents: upload (multipart, several files), list, get, delete; pages (text, word boxes) and their images."""

from __future__ import annotations

import io
import json
from typing import Annotated, Any

from fastapi import APIRouter, File, Form, Query, Request, UploadFile, status
from fastapi.responses import JSONResponse, Response
from pydantic import TypeAdapter, ValidationError
from starlette.concurrency import run_in_threadpool

from api.deps import ApplicationDep, ReadDep, WriteDep
from api.errors import responses, status_of
from api.routes.jobs import FINISHED_STATES
from api.schemas import (
    SQLITE_INT,
    DocumentDetail,
    DocumentOut,
    ErrorBody,
    FileError,
    JobOut,
    JobUploadOut,
    PageDetailOut,
    UploadMetadata,
)
from mmrag.application import Application, Refused, page_links
from mmrag.errors import CorruptDocument, InvalidInput, MMRAGError, NotFound, TooLarge, error_for_code
from mmrag.imaging import decode_image
from mmrag.ingest.sniff import ACCEPTED, check_declared_type
from mmrag.jobs.wait import JobWatch, wait_job_async

router = APIRouter(prefix="/corpora/{corpus}", tags=["documents"])
CHUNK = 1024 * 1024
# An upload is refused with the error body, or, when every file was refused, with the upload body
# listing each file's reason (status: the first file's).
METADATA: TypeAdapter[dict[str, Any]] = TypeAdapter(UploadMetadata)
UPLOAD_REFUSALS = {400: "Invalid request or files", 413: "Too large", 415: "Unsupported media type",
                   422: "Corrupt files or invalid parameters",
                   503: "A file needs a converter isolation this host cannot give (MMRAG_INGEST__CONVERT_ISOLATION)",
                   507: "No space left on the data folder's disk (error no_space): the upload was not kept, "
                        "nothing stored before is lost; send it again once space is freed"}


def page_urls(request: Request, corpus: str, page_id: str) -> tuple[str, str]:
    return page_links(request.app.state.settings.api.public_url, corpus, page_id)


async def read_limited(upload: UploadFile, limit: int) -> bytes:
    """Read an upload, stopping as soon as it passes ``limit`` bytes."""
    buf = bytearray()
    while chunk := await upload.read(CHUNK):
        buf.extend(chunk)
        if len(buf) > limit:
            raise TooLarge(f"{upload.filename} is larger than the limit of {limit:,} bytes "
                           "(MMRAG_INGEST__MAX_UPLOAD_BYTES)")
    return bytes(buf)


def parse_metadata(raw: str | None) -> dict[str, Any]:
    """The upload's metadata: a JSON object of field -> value, bounded as search filters are (UploadMetadata)."""
    if not raw:
        return {}
    try:
        value = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"metadata must be a JSON object: {exc}") from exc
    if not isinstance(value, dict):
        raise InvalidInput("metadata must be a JSON object of field -> value")
    try:
        return dict(METADATA.validate_python(value))
    except ValidationError as exc:
        problem = exc.errors()[0]
        raise InvalidInput(f"metadata: {problem.get('msg')} at {'.'.join(map(str, problem.get('loc', ())))}; values "
                           "are strings, integers within +-2**53, finite numbers, booleans or lists of strings "
                           "or integers") from exc


@router.post("/documents", status_code=status.HTTP_202_ACCEPTED, response_model=JobUploadOut,
             responses={**responses(404), **{c: {"model": ErrorBody | JobUploadOut, "description": d} for c, d in
                                             UPLOAD_REFUSALS.items()},
                        201: {"model": JobUploadOut, "description": "wait=true: the job created a document"},
                        200: {"model": JobUploadOut, "description": "wait=true: every file existed already"}})
async def upload_documents(
    corpus: str, application: ApplicationDep, request: Request, principal: WriteDep,
    files: Annotated[list[UploadFile], File(description=f"Documents, told by their bytes: {ACCEPTED}")],
    metadata: Annotated[str | None, Form(description="JSON object stored with every file")] = None,
    wait: Annotated[bool, Query(description="Answer when the job has finished, with its documents")] = False,
) -> Response:
    """Start a job indexing the files (202, with the job; follow ``/jobs/{id}`` or its events).
    Files that are empty, too large, not a supported type, or over a container limit (ZIP entries,
    unpacked size, compression ratio, XML entities, worksheet rows, email attachments; docs/ingest.md)
    are rejected here (listed in ``errors``; if every file is, the status is the first one's). An
    email's attachments become documents of the same job. Corrupt or encrypted files are found while
    parsing and reported per file in the job; the other files go on. Re-uploading the same bytes is
    a no-op (file state ``exists``). ``wait=true`` answers when the job has finished: 201 if a
    document was created, 200 if all existed, else the first failure's status."""
    mine = application.as_principal(principal)
    settings = request.app.state.settings
    mine.corpus(corpus)  # 404 for an unknown corpus, before the files are read
    limit = settings.api.max_files_per_upload
    if len(files) > limit:
        raise InvalidInput(f"{len(files)} files in one upload; the limit is {limit} (MMRAG_API__MAX_FILES_PER_UPLOAD)")
    quota = request.app.state.auth.jobs
    if principal.key is not None:
        quota.check(principal.id, lambda job_id: job_finished(mine, job_id))
    given = len((await request.form()).getlist("metadata"))  # parsed once already; Starlette caches it
    if given > 1:
        raise InvalidInput(f"metadata was given {given} times; give one JSON object, once")
    meta = parse_metadata(metadata)
    files_read: list[tuple[str, bytes] | Refused] = []
    for upload in files:
        name = upload.filename or "upload"
        try:
            data = await read_limited(upload, settings.ingest.max_upload_bytes)
            check_declared_type(upload.content_type, data, name)  # 415 when the declared type names another kind
            files_read.append((name, data))
        except MMRAGError as exc:
            files_read.append(Refused(name, exc.code, exc.message))
    uploaded = await run_in_threadpool(mine.upload, corpus, files_read, meta)
    errors = [(FileError(filename=r.filename, error=r.code, message=r.message),
               status_of(error_for_code(r.code, r.message))) for r in uploaded.refused]
    if uploaded.job_id is None:
        body = JobUploadOut(job=None, errors=[e for e, _ in errors])
        return JSONResponse(body.model_dump(), status_code=errors[0][1])
    job_id = uploaded.job_id
    if principal.key is not None:
        quota.add(principal.id, job_id)
    if not wait:
        body = JobUploadOut(job=JobOut.model_validate(mine.job(job_id)), errors=[e for e, _ in errors])
        return JSONResponse(body.model_dump(), status_code=status.HTTP_202_ACCEPTED)
    watch: JobWatch[dict[str, Any]] = JobWatch(job_id, lambda job: str(job["state"]))
    job = await wait_job_async(lambda: mine.job(job_id), watch)
    return finished_upload(mine, job, errors)


def job_finished(application: Application, job_id: str) -> bool:
    """For the per-key job cap: a job that is gone counts as finished."""
    try:
        return application.job(job_id)["state"] in FINISHED_STATES
    except NotFound:
        return True


def finished_upload(application: Application, job: dict[str, Any], errors: list[tuple[FileError, int]]) -> Response:
    docs: list[DocumentOut] = []
    for f in job["files"]:
        if f["state"] in ("done", "exists"):
            try:
                info = application.document(job["corpus"], f["document_id"])
            except NotFound:  # deleted since
                continue
            docs.append(DocumentOut.model_validate({**info, "status": "created" if f["state"] == "done" else "exists"}))
        elif f["error"]:
            errors.append((FileError(filename=f["filename"], error=f["error"], message=f["message"] or ""),
                           status_of(error_for_code(f["error"], "", fallback=CorruptDocument))))
    body = JobUploadOut(job=JobOut.model_validate(job), documents=docs, errors=[e for e, _ in errors])
    code = status.HTTP_201_CREATED if docs else (errors[0][1] if errors else status.HTTP_200_OK)
    if docs and not any(d.status == "created" for d in docs):
        code = status.HTTP_200_OK
    return JSONResponse(body.model_dump(), status_code=code)


@router.get("/documents", response_model=list[DocumentOut], responses=responses(404))
def list_documents(corpus: str, application: ApplicationDep, principal: ReadDep,
                   offset: Annotated[int, Query(ge=0, le=SQLITE_INT)] = 0,
                   limit: Annotated[int, Query(ge=1, le=10_000)] = 1000) -> list[DocumentOut]:
    listed = application.as_principal(principal).documents(corpus, offset=offset, limit=limit)
    return [DocumentOut.model_validate(d) for d in listed]


@router.get("/documents/{document_id}", response_model=DocumentDetail, responses=responses(404))
def get_document(corpus: str, document_id: str, application: ApplicationDep, principal: ReadDep) -> DocumentDetail:
    return DocumentDetail.model_validate(application.as_principal(principal).document(corpus, document_id))


@router.delete("/documents/{document_id}", status_code=status.HTTP_204_NO_CONTENT, responses=responses(404))
def delete_document(corpus: str, document_id: str, application: ApplicationDep, principal: WriteDep) -> None:
    """Delete a document: its vectors, pages and images."""
    application.as_principal(principal).delete_document(corpus, document_id)


@router.get("/pages/{page_id}", response_model=PageDetailOut, responses=responses(404))
def get_page(corpus: str, page_id: str, application: ApplicationDep, principal: ReadDep) -> PageDetailOut:
    """A page: its number, document, text and word boxes (normalised x0, y0, x1, y1), and its image URL."""
    return PageDetailOut.model_validate(application.as_principal(principal).page(corpus, page_id))


@router.get("/pages/{page_id}/image", response_class=Response, responses={**responses(404, 422, 503), 200: {
    "description": "The page as PNG, or a JPEG thumbnail with width", "content": {"image/png": {}, "image/jpeg": {}}}})
def page_image(corpus: str, page_id: str, request: Request, application: ApplicationDep, principal: ReadDep,
               width: Annotated[int | None, Query(ge=16, le=4096, description="Thumbnail width")] = None) -> Response:
    """The rendered page (PNG), or a JPEG thumbnail when ``width`` is given. A page rendered from its kept
    PDF is drawn in a parse worker under the page's clock: one that cannot be drawn within it is a 422
    ``too_complex`` naming the setting (the service is not held up)."""
    png = application.as_principal(principal).page_image(corpus, page_id)  # stored, or drawn from the kept PDF
    if width is None:
        return Response(png, media_type="image/png", headers={"Cache-Control": "max-age=86400"})
    img = decode_image(png, max_pixels=request.app.state.settings.ingest.max_image_pixels, what=f"page {page_id}")
    img.thumbnail((width, width * 4))
    buf = io.BytesIO()
    img.save(buf, format="JPEG", quality=80)
    return Response(buf.getvalue(), media_type="image/jpeg", headers={"Cache-Control": "max-age=86400"})


