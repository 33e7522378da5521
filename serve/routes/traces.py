"""`GET /traces/{id}` (JSON), `/traces/{id}/view` (HTML viewer) and the viewer's frame thumbnails."""

from __future__ import annotations

import re
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Path, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from serve import deps
from serve.errors import ApiError
from serve.links import with_viewer
from serve.schemas import AnswerResponse, ErrorBody
from serve.settings import Settings
from serve.store import TraceStore
from serve.viewer import render_trace

router = APIRouter(prefix="/traces", dependencies=[Depends(deps.api_key)], tags=["traces"])  # JSON: the key
pages = APIRouter(prefix="/traces", dependencies=[Depends(deps.viewer_access)], tags=["traces"])  # or a signed link
_ID = re.compile(r"^[0-9a-f]{32}$")
NOT_FOUND = {404: {"model": ErrorBody, "description": "No trace with this id"}}
MAX_INDEX = 10_000  # steps of a trace and thumbnails of a step are far fewer; SQLite integers must fit 64 bits


async def _trace(trace_id: str, store: TraceStore) -> AnswerResponse:
    found = await run_in_threadpool(store.get, trace_id) if _ID.match(trace_id) else None
    if found is None:
        raise ApiError(404, "trace_not_found", f"no trace with id {trace_id[:64]!r}")
    return found


@router.get("/{trace_id}", response_model=AnswerResponse, responses=NOT_FOUND, summary="A stored trace")
async def get_trace(
    trace_id: str, store: TraceStore = Depends(deps.store), settings: Settings = Depends(deps.settings)
) -> AnswerResponse:
    """The run as `/answer` returned it (or as far as it got: status `running`, or a partial trace), with a fresh
    viewer link."""
    return with_viewer(await _trace(trace_id, store), settings)


@pages.get("/{trace_id}/view", response_class=HTMLResponse, responses=NOT_FOUND, summary="The trace viewer")
async def view_trace(request: Request, trace_id: str, store: TraceStore = Depends(deps.store)) -> HTMLResponse:
    """An HTML page: the question, each step with thumbnails of the frames the visual agent saw, the observations,
    the answer and timings. With an API key set, a browser opens it through the signed `viewer_url` of the
    `/answer` reply (the same link signs its thumbnails)."""
    trace = await _trace(trace_id, store)
    frames = await run_in_threadpool(store.frame_index, trace_id)
    link = {name: request.query_params.get(name) for name in ("exp", "token")}
    signed = "?" + urlencode(link) if all(link.values()) else ""  # the page's signed link signs its thumbnails
    return HTMLResponse(render_trace(trace, frames, signed))


@pages.get(
    "/{trace_id}/frames/{step}/{k}.jpg",
    response_class=Response,
    responses={200: {"content": {"image/jpeg": {}}}, **NOT_FOUND},
    summary="One frame thumbnail",
)
async def frame(
    trace_id: str,
    step: Annotated[int, Path(ge=0, le=MAX_INDEX, description="Step index in the trace, from 0.")],
    k: Annotated[int, Path(ge=0, le=MAX_INDEX, description="Thumbnail index in the step, from 0.")],
    store: TraceStore = Depends(deps.store),
) -> Response:
    """Thumbnail `k` of step `step` (JPEG)."""
    jpeg = await run_in_threadpool(store.frame, trace_id, step, k) if _ID.match(trace_id) else None
    if jpeg is None:
        raise ApiError(404, "frame_not_found", f"no frame {k} for step {step} of this trace")
    return Response(jpeg, media_type="image/jpeg", headers={"Cache-Control": "max-age=86400"})
