"""FastAPI dependencies as Annotated aliases."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request

from mmrag.pipeline import Pipeline


def get_pipeline(request: Request) -> Pipeline:
    pipeline: Pipeline = request.app.state.pipeline
    return pipeline


PipelineDep = Annotated[Pipeline, Depends(get_pipeline)]
