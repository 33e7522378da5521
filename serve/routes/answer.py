"""`POST /answer` (blocking) and `POST /answer/stream` (server-sent events): thin handlers over `RunService`.

Both take the same body, JSON (`AnswerRequest`) or multipart with the same fields and uploaded files as `videos`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from fastapi import APIRouter, Depends, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent

from serve import deps
from serve.episodes import build_episode
from serve.errors import ApiError
from serve.links import with_viewer
from serve.requests import Prepared, read_request
from serve.retention import drop_uploads
from serve.runs import Run, RunService
from serve.schemas import AnswerRequest, AnswerResponse, ErrorBody, Timings

router = APIRouter(dependencies=[Depends(deps.api_key)], tags=["answer"])

_MULTIPART = {
    "type": "object",
    "required": ["question", "videos"],
    "properties": {
        "question": {"type": "string", "description": "The question."},
        "options": {"type": "array", "items": {"type": "string"}, "description": "Answer options, one per field."},
        "task": {"type": "string", "description": "CrossVid task kind."},
        "max_turns": {
            "type": "integer",
            "minimum": 1,
            "description": "Policy turns before a forced answer; at most the server's max_turns (more gets 422).",
        },
        "videos": {
            "type": "array",
            "items": {"type": "string", "format": "binary"},
            "description": "Uploaded video files (or media-root paths as text fields), numbered in order.",
        },
    },
}
BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {"schema": {"$ref": "#/components/schemas/AnswerRequest"}},
            "multipart/form-data": {"schema": _MULTIPART},
        },
    }
}
ERRORS = {
    status: {"model": ErrorBody, "description": text}
    for status, text in {
        400: "Malformed body or a path outside the media root",
        401: "Missing or wrong API key",
        404: "A video is not under the media root",
        408: "The body stopped arriving (e.g. shorter than its Content-Length)",
        413: "Request, upload or video too large or too long",
        415: "Wrong content type, or a file that is not a video",
        422: "A field breaks its rule or a server limit (the message names it)",
        429: "The queue is full (see Retry-After)",
        503: "No run slot in time (see Retry-After)",
    }.items()
}


def request_schemas() -> dict[str, dict]:
    """OpenAPI component schemas of the JSON body (the handlers read the body themselves, JSON or multipart)."""
    schema = AnswerRequest.model_json_schema(ref_template="#/components/schemas/{model}")
    return {**schema.pop("$defs", {}), "AnswerRequest": schema}


async def _start(request: Request, service: RunService) -> Run:
    prepared: Prepared = await read_request(request, service.settings)
    answer = prepared.request
    episode = build_episode(prepared.trace_id, answer, prepared.files)
    try:
        await service.admit()
    except ApiError:
        drop_uploads(service.settings, prepared.trace_id)  # refused before it ran: its uploads go now
        raise
    response = AnswerResponse(
        trace_id=prepared.trace_id,
        status="running",
        task=episode.task,
        question=answer.question,
        options=answer.options,
        videos=[name for name, _, _ in prepared.files],
        timings=Timings(total_seconds=0, policy_seconds=0, tool_seconds=0),
        created=time.time(),
    )
    return service.launch(episode, response, answer.max_turns or service.settings.max_turns)


async def started_run(request: Request, service: RunService = Depends(deps.service)) -> Run:
    """Validate, take a slot and start the run before any response byte is sent (so errors keep their status)."""
    return await _start(request, service)


@router.post(
    "/answer",
    response_model=AnswerResponse,
    responses=ERRORS,
    openapi_extra=BODY,
    summary="Answer a question over 1-8 videos",
)
async def answer(
    request: Request, run: Run = Depends(started_run), service: RunService = Depends(deps.service)
) -> AnswerResponse:
    """Run the agent to its end and return the answer with the whole trace. `status` is `success`, `error` (no
    answer; `message` says why, the partial trace is kept) or `timeout`.

    Example: `curl -s localhost:8000/answer -H 'content-type: application/json'
    -d '{"question": "Which video shows a dog?", "options": ["A. Video 1", "B. Video 2"],
    "videos": [{"path": "cat.mp4"}, {"path": "dog.mp4"}]}'`"""
    waiting = asyncio.ensure_future(service.wait(run))
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait({waiting, gone}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if not waiting.done():  # the client gave up: stop its run where it is, freeing the slot
        run.stop("cancelled")
        waiting.cancel()
        return Response(status_code=499)  # nobody reads it; nginx's code for "client closed request"
    return with_viewer(waiting.result(), service.settings)


async def _disconnected(request: Request) -> None:
    """Return when the client closes its connection. The body has been read whole, so the server's next message is
    the disconnect: waiting for it notices at once, where polling `is_disconnected()` noticed up to a poll later."""
    while (await request.receive())["type"] != "http.disconnect":
        pass


@router.post(
    "/answer/stream",
    response_class=EventSourceResponse,
    responses=ERRORS,
    openapi_extra=BODY,
    summary="The same run, streamed as server-sent events",
)
async def answer_stream(
    run: Run = Depends(started_run), service: RunService = Depends(deps.service)
) -> AsyncIterator[ServerSentEvent]:
    """Events: `metadata` (id 0: trace id), one `step` per step as it happens (id = step index + 1), then `answer`
    (status success) or `error` (`{status, message, trace_id}`). A client that disconnects cancels its run."""
    yield ServerSentEvent(event="metadata", id="0", data={"trace_id": run.response.trace_id, "task": run.response.task})
    last = 0
    try:
        async for kind, payload in run.events(service.deadline(run)):
            if kind == "step":
                last = payload.index + 1
                yield ServerSentEvent(event="step", id=str(last), data=payload)
            else:
                final: AnswerResponse = with_viewer(payload, service.settings)
                event = "answer" if final.status == "success" else "error"
                yield ServerSentEvent(event=event, id=str(last + 1), data=final)
    finally:
        if not run.done.is_set():
            run.stop("cancelled")  # the client went away: stop the run where it is (a shutdown has already said so)
