"""Response bodies of the health routes (api/routes/health.py): what serves, liveness, readiness."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field


class IsolationOut(BaseModel):
    mode: Literal["jail", "network", "none"] = Field(..., description="MMRAG_INGEST__CONVERT_ISOLATION")
    in_force: bool = Field(..., description="false: this process refuses conversions (503) until the host allows "
                                            "the mode (conversions by Celery workers are judged there)")
    detail: str = Field(..., description="How the converters are isolated here, or why that cannot be done")


class HealthOut(BaseModel):
    status: str
    version: str
    spaces: dict[str, Any] = Field(..., description="Spaces whose model has not failed: the model and its state")
    serving: list[str] = Field(..., description="Spaces that can serve: model loaded, or loading for the corpora")
    pending: list[str] = Field(..., description="Spaces whose model no corpus uses and nobody has tried yet")
    off: dict[str, str] = Field(..., description="Each space or model that cannot be used: a one-line reason")
    unavailable: dict[str, str] = Field(..., description="The same, with the full reason")
    store: str
    text_kernels: dict[str, str] = Field(..., description="What the text model computes in (precision), with which "
                                                          "kernels, on which CPU kind, and why (where: in-process or "
                                                          "embedding service)")
    convert_isolation: IsolationOut


class LiveOut(BaseModel):
    status: Literal["ok"]


class ReadyOut(BaseModel):
    status: Literal["ok", "unavailable"]
    checks: dict[str, str] = Field(..., description="Each dependency: 'ok' or why it does not answer")
