"""The OpenAPI document says exactly what the server does.

FastAPI's generated schema is completed here, once, from the route table:

- every 422 (and every other error) is our :class:`api.errors.ErrorBody`, not FastAPI's
  ``HTTPValidationError`` (which the server never sends);
- routes behind an API key declare the bearer scheme and their 401 / 403 / 429 answers;
- routes with path parameters declare 404, routes with a body 400 (unreadable body) and 413
  (naming the route's body limit, ``api.limits.body_limit``), routes with any input 422;
- bounds that are settings (query length, top_k, the query image's size) and enums that are this
  server's (the spaces a corpus can have) carry this server's values.
"""

from __future__ import annotations

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi
from pydantic import BaseModel

from api.auth import PUBLIC, route_scopes
from api.errors import responses, speaks_openai
from api.limits import body_limit
from api.openai_schemas import ChatCompletionChunk, OpenAIErrorBody
from api.schemas import ErrorBody
from mmrag.config import Settings
from mmrag.spaces.registry import page_spaces, space_names

ERROR_REF = {"$ref": "#/components/schemas/ErrorBody"}
OPENAI_ERROR_REF = {"$ref": "#/components/schemas/OpenAIErrorBody"}  # the errors of the /v1 routes
METHODS = ("get", "put", "post", "delete", "patch", "head", "options", "trace")
CORPUS = {"corpus": "$response.body#/name"}
SAME_CORPUS = {"corpus": "$request.path.corpus"}
# OpenAPI links (source operation, status) -> [(target operation, parameters)]: how a client (and
# schemathesis's stateful phase) gets from a created object to the routes that use it.
LINKS: dict[tuple[str, str, str], list[tuple[str, str, dict[str, str]]]] = {
    ("POST", "/corpora", "201"): [
        ("GET", "/corpora/{corpus}", CORPUS), ("GET", "/corpora/{corpus}/documents", CORPUS),
        ("POST", "/corpora/{corpus}/documents", CORPUS), ("POST", "/corpora/{corpus}/search", CORPUS),
        ("POST", "/corpora/{corpus}/search/image", CORPUS), ("POST", "/corpora/{corpus}/answer", CORPUS),
        ("GET", "/corpora/{corpus}/jobs", CORPUS), ("DELETE", "/corpora/{corpus}", CORPUS)],
    ("POST", "/corpora/{corpus}/documents", "202"): [
        ("GET", "/jobs/{job_id}", {"job_id": "$response.body#/job/id"}),
        ("GET", "/jobs/{job_id}/events", {"job_id": "$response.body#/job/id"}),
        ("POST", "/jobs/{job_id}/cancel", {"job_id": "$response.body#/job/id"})],
    ("POST", "/corpora/{corpus}/documents", "201"): [  # wait=true: the document exists (after a 202, only once
        ("GET", "/corpora/{corpus}/documents/{document_id}",  # its job has indexed it)
         {**SAME_CORPUS, "document_id": "$response.body#/documents/0/id"}),
        ("DELETE", "/corpora/{corpus}/documents/{document_id}",
         {**SAME_CORPUS, "document_id": "$response.body#/documents/0/id"})],
    ("GET", "/corpora/{corpus}/documents/{document_id}", "200"): [
        ("GET", "/corpora/{corpus}/pages/{page_id}", {**SAME_CORPUS, "page_id": "$response.body#/pages/0/id"}),
        ("GET", "/corpora/{corpus}/pages/{page_id}/image", {**SAME_CORPUS, "page_id": "$response.body#/pages/0/id"})],
    ("POST", "/evaluations", "202"): [
        ("GET", "/evaluations/{job_id}", {"job_id": "$response.body#/id"}),
        ("GET", "/evaluations/{job_id}/report", {"job_id": "$response.body#/id"})],
    ("POST", "/keys", "201"): [("DELETE", "/keys/{key_id}", {"key_id": "$response.body#/id"})],
}


def complete_operation(op: dict[str, Any], scope: str, error_ref: dict[str, str] = ERROR_REF) -> None:
    """Add the error answers this operation can give and point every error at ErrorBody (``error_ref``)."""
    needed: list[int] = []
    has_params = bool(op.get("parameters")) or "requestBody" in op
    if any(p.get("in") == "path" for p in op.get("parameters", [])):
        needed.append(404)
    if "requestBody" in op:
        needed += [400, 413]
    if has_params:
        needed.append(422)
    if scope != PUBLIC:
        needed += [401, 403, 429]
        op["security"] = [{"bearer": []}]
    for code, entry in responses(*needed).items():
        op["responses"].setdefault(str(code), {"description": entry["description"]})
    for code, answer in op["responses"].items():
        if code.startswith(("4", "5")) and not _has_own_schema(answer):
            answer["content"] = {"application/json": {"schema": error_ref}}


def _has_own_schema(answer: dict[str, Any]) -> bool:
    """A documented error body other than FastAPI's validation error (e.g. the upload's JobUploadOut)."""
    schema = answer.get("content", {}).get("application/json", {}).get("schema")
    return bool(schema) and schema.get("$ref", "").rsplit("/", 1)[-1] not in ("HTTPValidationError", "ErrorBody",
                                                                              "OpenAIErrorBody")


def apply_limits(models: dict[str, Any], settings: Settings, spaces: list[str]) -> None:
    """Bounds that are configuration, not code: the schema states this server's values (``spaces``: the
    ones this server can create corpora with)."""
    retrieve = settings.retrieve
    for name, model in models.items():
        props = model.get("properties", {})
        if name in ("SearchIn", "SearchOptions"):
            registered_spaces(props)
        if name in ("SearchIn", "SearchOptions") or name.startswith("Body_search_by_image"):
            if "query" in props:
                props["query"]["maxLength"] = retrieve.max_query_chars
            if "top_k" in props:
                props["top_k"]["maximum"] = retrieve.max_top_k
            if "prefetch_limit" in props:
                props["prefetch_limit"]["anyOf"][0]["maximum"] = retrieve.max_prefetch_limit
            if "image_base64" in props:
                props["image_base64"]["anyOf"][0]["maxLength"] = -(-retrieve.max_query_image_bytes // 3) * 4
        if name == "AnswerIn":
            props["question"]["maxLength"] = min(props["question"].get("maxLength", 4000), retrieve.max_query_chars)
            props["top_k"]["maximum"] = min(props["top_k"].get("maximum", 50), retrieve.max_top_k)
        if name == "CorpusConfig":
            props["spaces"]["items"] = {"type": "string", "enum": spaces}
        for field in model.get("required", []):
            if props.get(field, {}).get("type") == "array" and name.startswith("Body_"):
                props[field]["minItems"] = 1  # a multipart list with no parts is a missing field
        for prop in props.values():  # a file part holds at least one byte (an empty one is refused)
            for schema in (prop, prop.get("items", {})):
                if schema.get("format") == "binary" or schema.get("contentMediaType") == "application/octet-stream":
                    schema["minLength"] = 1


def registered_spaces(props: dict[str, Any]) -> None:
    """A search's ``spaces`` and ``weights`` name registered spaces (the registry decides, request types check
    it): their enums, and at least one that ranks pages."""
    names = list(space_names())
    spaces = props["spaces"]
    spaces["anyOf"][0]["items"]["enum"] = names
    spaces["contains"] = {"enum": list(page_spaces())}
    props["weights"]["anyOf"][0]["propertyNames"] = {"enum": names}


def no_image_queries(schema: dict[str, Any]) -> None:
    """A server with no image space takes no query image: the schema leaves them out (no ``/search/image``,
    ``image_base64`` and ``image_page_id`` only null)."""
    schema["paths"].pop("/corpora/{corpus}/search/image", None)
    models = schema.get("components", {}).get("schemas", {})
    for field in ("image_base64", "image_page_id"):
        models["SearchIn"]["properties"][field] = {"type": "null", "default": None,
                                                  "description": "No space of this server takes image queries"}
    for name in [n for n in models if n.startswith("Body_search_by_image")]:
        models.pop(name)


NOT_BLANK = r"[^\s\x1c-\x1f\x85]"  # a character str.strip() keeps, in Python's and ECMA's regex alike


def something_to_search(model: dict[str, Any], image: bool) -> None:
    """A search needs a text query that is not blank, or (on a server with an image space) an image."""
    ways: list[dict[str, Any]] = [{"required": ["query"], "properties": {"query": {"pattern": NOT_BLANK}}}]
    if image:
        ways += [{"required": ["image_base64"], "properties": {"image_base64": {"type": "string"}}},
                 {"required": ["image_page_id"], "properties": {"image_page_id": {"type": "string"}}}]
    model["anyOf"] = ways


def a_question_to_answer(models: dict[str, Any], image: bool) -> None:
    """A chat request needs a user message with text that is not blank or (on a server with an image space) an
    image: the question. Without an image space a user message holds text parts only."""
    text = {"type": "string", "pattern": NOT_BLANK}
    part = {"type": "object", "required": ["type", "text"], "properties": {"type": {"const": "text"}, "text": text}}
    ways: list[dict[str, Any]] = [text, {"type": "array", "contains": part}]
    content = models["UserMessage"]["properties"]["content"]["anyOf"]
    if image:
        ways.append({"type": "array", "contains": {"type": "object", "required": ["type", "image_url"],
                                                   "properties": {"type": {"const": "image_url"}}}})
    else:
        content[1]["items"] = {"$ref": "#/components/schemas/TextPart"}
        models.pop("ImagePart", None)
        models.pop("ImageUrl", None)
    question = {"type": "object", "required": ["role", "content"],
                "properties": {"role": {"const": "user"}, "content": {"anyOf": ways}}}
    models["ChatCompletionIn"]["properties"]["messages"]["contains"] = question


def add_models(models: dict[str, Any], *classes: type[BaseModel]) -> None:
    """Models that no route names as its JSON body (error bodies, the chunks of a stream) as components."""
    for cls in classes:
        schema = cls.model_json_schema(ref_template="#/components/schemas/{model}")
        for name, model in schema.pop("$defs", {}).items():
            models.setdefault(name, model)
        models[cls.__name__] = schema


def upload_metadata_as_json(schema: dict[str, Any]) -> None:
    """The upload's ``metadata`` part is a JSON object (sent as ``application/json``), not any string."""
    body = schema["paths"]["/corpora/{corpus}/documents"]["post"]["requestBody"]["content"]["multipart/form-data"]
    ref = body["schema"]["$ref"].rsplit("/", 1)[-1]
    model = schema["components"]["schemas"][ref]
    # each part of the array is a file: said on the array too (validators ignore it on arrays; generators
    # that send one part of it then still send it as a file, with a filename)
    model["properties"]["files"]["contentMediaType"] = "application/octet-stream"
    filters = schema["components"]["schemas"]["SearchIn"]["properties"]["metadata"]
    model["properties"]["metadata"] = {**filters, "description": "A JSON object stored with every file: field -> value "
                                                              "(the kinds of value a search filter takes)"}
    body["encoding"] = {"metadata": {"contentType": "application/json"},
                        # the kinds are told by the bytes (any of ACCEPTED); these name what a client sends most
                        "files": {"contentType": "application/pdf, image/png, text/plain",
                                  "headers": {"Content-Disposition": {
                                      "schema": {"type": "string"},
                                      "example": 'form-data; name="files"; filename="upload"'}}}}


def evaluation_suites(models: dict[str, Any], service: Any) -> None:
    """The suites this server has, each with its variants (a variant belongs to one suite)."""
    import yaml

    options = []
    for suite in service.suites():
        try:
            raw = yaml.safe_load((service.suites_dir / suite / "suite.yaml").read_text()) or {}
            variants = sorted(raw.get("variants") or {})
        except (OSError, yaml.YAMLError, AttributeError):  # listed anyway; starting it says what is wrong
            variants = []
        variant: dict[str, Any] = {"type": "null"}
        if variants:
            variant = {"anyOf": [{"type": "string", "enum": variants}, {"type": "null"}]}
        options.append({"type": "object", "additionalProperties": False, "required": ["suite"],
                        "properties": {"suite": {"const": suite}, "variant": variant}})
    if options:
        described = models["EvaluationIn"]
        models["EvaluationIn"] = {"title": "EvaluationIn", "description": described.get("description", ""),
                                  "oneOf": options}


def describe_body_limits(schema: dict[str, Any], settings: Settings) -> None:
    """Each 413 names its route's body limit and the setting behind it."""
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            answer = op.get("responses", {}).get("413") if isinstance(op, dict) else None
            if answer is not None:
                limit, setting = body_limit(method.upper(), path, settings)
                answer["description"] = f"Too large: this route's body limit is {limit:,} bytes ({setting})"


def build_schema(app: FastAPI, settings: Settings) -> dict[str, Any]:
    schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    scopes = route_scopes(app)
    for path, ops in schema["paths"].items():
        for method, op in ops.items():
            if method in METHODS:
                complete_operation(op, scopes.get((method.upper(), path), PUBLIC),
                                   OPENAI_ERROR_REF if speaks_openai(path) else ERROR_REF)
    describe_body_limits(schema, settings)
    components = schema.setdefault("components", {})
    models = components.setdefault("schemas", {})
    models.pop("HTTPValidationError", None)
    models.pop("ValidationError", None)
    pipeline = getattr(app.state, "pipeline", None)
    spaces = pipeline.space_names() if pipeline is not None else list(space_names())
    apply_limits(models, settings, spaces)
    image_spaces = pipeline.image_spaces() if pipeline is not None else spaces
    if not image_spaces:
        no_image_queries(schema)
    something_to_search(models["SearchIn"], image=bool(image_spaces))
    a_question_to_answer(models, image=bool(image_spaces))
    upload_metadata_as_json(schema)
    add_links(schema)
    evaluations = getattr(app.state, "evaluations", None)
    if evaluations is not None:
        evaluation_suites(models, evaluations)
    add_models(models, ErrorBody, OpenAIErrorBody, ChatCompletionChunk)
    components["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer",
                                                "description": "An API key from `mmrag keys create`"}}
    return schema


def add_links(schema: dict[str, Any]) -> None:
    paths = schema["paths"]
    for (method, path, status), targets in LINKS.items():
        answer = paths[path][method.lower()]["responses"][status]
        answer["links"] = {
            f"{m.lower()}_{p.strip('/').replace('/', '_').replace('{', '').replace('}', '')}": {
                "operationId": paths[p][m.lower()]["operationId"], "parameters": params}
            for m, p, params in targets if p in paths}  # a route this server leaves out has no link


def install_contract(app: FastAPI, settings: Settings) -> None:
    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = build_schema(app, settings)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
