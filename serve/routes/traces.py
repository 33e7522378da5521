"""`GET /traces/{id}` (JSON), `/traces/{id}/view` (HTML viewer) and the viewer's frame thumbnails."""

from __future__ import annotations

import re

from fastapi import APIRouter, Depends
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from serve import deps
from serve.errors import ApiError
from serve.schemas import AnswerResponse, ErrorBody
from serve.store import TraceStore
from serve.viewer import render_trace

router = APIRouter(prefix="/traces", dependencies=[Depends(deps.api_key)], tags=["traces"])
_ID = re.compile(r"^[0-9a-f]{32}$")
NOT_FOUND = {404: {"model": ErrorBody, "description": "No trace with this id"}}


async def _trace(trace_id: str, store: TraceStore) -> AnswerResponse:
    found = await run_in_threadpool(store.get, trace_id) if _ID.match(trace_id) else None
    if found is None:
        raise ApiError(404, "trace_not_found", f"no trace with id {trace_id[:64]!r}")
    return found


@router.get("/{trace_id}", response_model=AnswerResponse, responses=NOT_FOUND, summary="A stored trace")
async def get_trace(trace_id: str, store: TraceStore = Depends(deps.store)) -> AnswerResponse:
    """The run as `/answer` returned it (or as far as it got: status `running`, or a partial trace)."""
    return await _trace(trace_id, store)


@router.get("/{trace_id}/view", response_class=HTMLResponse, responses=NOT_FOUND, summary="The trace viewer")
async def view_trace(trace_id: str, store: TraceStore = Depends(deps.store)) -> HTMLResponse:
    """An HTML page: the question, each step with thumbnails of the frames the visual agent saw, the observations,
    the answer and timings."""
    trace = await _trace(trace_id, store)
    frames = await run_in_threadpool(store.frame_index, trace_id)
    return HTMLResponse(render_trace(trace, frames))


@router.get(
    "/{trace_id}/frames/{step}/{k}.jpg",
    response_class=Response,
    responses={200: {"content": {"image/jpeg": {}}}, **NOT_FOUND},
    summary="One frame thumbnail",
)
async def frame(trace_id: str, step: int, k: int, store: TraceStore = Depends(deps.store)) -> Response:
    """Thumbnail `k` of step `step` (JPEG)."""
    jpeg = await run_in_threadpool(store.frame, trace_id, step, k) if _ID.match(trace_id) else None
    if jpeg is None:
        raise ApiError(404, "frame_not_found", f"no frame {k} for step {step} of this trace")
    return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "max-age=86400"})
