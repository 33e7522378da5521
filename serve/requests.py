"""Reading an `/answer` request, JSON or multipart, into a checked `AnswerRequest` and the files of its videos.

Everything here runs before a run slot is taken: a bad request costs no agent time. Blocking file work (probing
videos, copying uploads) runs in a worker thread.
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

from fastapi import Request
from pydantic import ValidationError
from starlette.concurrency import run_in_threadpool
from starlette.datastructures import UploadFile
from starlette.types import Message

from serve.episodes import check_request
from serve.errors import ApiError
from serve.retention import drop_uploads
from serve.safety import checked_video, confined, mib
from serve.schemas import AnswerRequest, VideoInput
from serve.settings import Settings


@dataclass
class Prepared:
    trace_id: str
    request: AnswerRequest
    files: list[tuple[str, str, float]]  # (name as requested, file path, duration s)


def _invalid(error: ValidationError) -> ApiError:
    problems = []
    for item in error.errors()[:5]:
        where = ".".join(str(p) for p in item.get("loc", ())) or "body"
        problems.append(f"{where}: {item.get('msg', 'invalid')}")
    return ApiError(422, "invalid_request", "; ".join(problems))


def _too_large(limit: int) -> ApiError:
    return ApiError(413, "request_too_large", f"the request body is over the {mib(limit)} limit (max_request_mb)")


def _declared_size(request: Request, limit: int) -> int | None:
    """The Content-Length, if any; `ApiError` if it is not a number or over `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is None:
        return None
    if not declared.isdigit():
        raise ApiError(400, "invalid_content_length", f"Content-Length {declared[:40]!r} is not a number of bytes")
    if int(declared) > limit:
        raise _too_large(limit)
    return int(declared)


def _timed(request: Request, idle: float) -> Request:
    """The request with a body that must keep arriving: a pause of `idle` s is a 408 saying how much came (a
    Content-Length larger than the body sent would otherwise hold the request, and its worker, forever)."""
    receive, received = request.receive, 0
    declared = request.headers.get("content-length")

    async def timed_receive() -> Message:
        nonlocal received
        try:
            message = await asyncio.wait_for(receive(), idle)
        except TimeoutError:
            announced = f" of the {declared} that Content-Length announced" if declared else ""
            raise ApiError(
                408,
                "body_incomplete",
                f"the request body stopped after {received} bytes{announced}: nothing more came for {idle:g} s",
            ) from None
        received += len(message.get("body", b""))
        return message

    return Request(request.scope, timed_receive)


async def _body(request: Request, limit: int) -> bytes:
    """The body, refused with 413 as soon as it passes `limit` bytes (declared or streamed)."""
    _declared_size(request, limit)
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise _too_large(limit)
        chunks.append(chunk)
    return b"".join(chunks)


async def read_request(request: Request, settings: Settings) -> Prepared:
    """The checked request and its video files; `ApiError` naming what is wrong otherwise."""
    kind = request.headers.get("content-type", "").split(";")[0].strip().lower()
    limit = int(settings.max_request_mb * (1 << 20))
    trace_id = uuid.uuid4().hex
    request = _timed(request, settings.body_idle_timeout)
    if kind == "application/json":
        raw = await _body(request, limit)
        try:
            data = json.loads(raw)
        except RecursionError:
            raise ApiError(
                400,
                "json_too_deep",
                "the JSON body nests deeper than the parser allows (~1000 levels); a request nests 3",
            ) from None
        except (ValueError, UnicodeDecodeError):
            raise ApiError(400, "malformed_json", "the body is not valid JSON") from None
        try:
            answer = AnswerRequest.model_validate(data)
        except ValidationError as error:
            raise _invalid(error) from None
        check_request(answer, settings)
        files = await run_in_threadpool(_media_files, answer, settings)
        return Prepared(trace_id, answer, files)
    if kind == "multipart/form-data":
        return await _multipart(request, settings, trace_id, limit)
    raise ApiError(
        415, "unsupported_media_type", f"send application/json or multipart/form-data, not {kind or 'no content type'}"
    )


def _media_files(answer: AnswerRequest, settings: Settings) -> list[tuple[str, str, float]]:
    files = []
    max_bytes = int(settings.max_upload_mb * (1 << 20))
    for video in answer.videos:
        path = confined(settings.media_root, video.path)
        files.append((video.path, str(path), checked_video(path, video.path, settings.max_video_seconds, max_bytes)))
    return files


async def _multipart(request: Request, settings: Settings, trace_id: str, limit: int) -> Prepared:
    if _declared_size(request, limit) is None:
        raise ApiError(411, "length_required", "uploads need a Content-Length header")
    try:
        form = await request.form(max_files=settings.max_videos, max_fields=settings.max_options + 16)
    except ApiError:
        raise
    except Exception as error:  # starlette's MultiPartException and malformed bodies
        raise ApiError(400, "malformed_multipart", f"the multipart body could not be read: {error}") from None
    uploads = [item for item in form.getlist("videos") if isinstance(item, UploadFile)]
    paths = [item for item in form.getlist("videos") if isinstance(item, str)]
    max_turns = form.get("max_turns")
    fields = {
        "question": form.get("question"),
        "options": [o for o in form.getlist("options") if isinstance(o, str)],
        "task": form.get("task") or None,
        "videos": [{"path": p} for p in paths] + [{"path": "upload"} for _ in uploads],  # checked just below
        **({"max_turns": max_turns} if max_turns not in (None, "") else {}),
    }
    try:
        answer = AnswerRequest.model_validate({k: v for k, v in fields.items() if v is not None})
    except ValidationError as error:
        raise _invalid(error) from None
    check_request(answer, settings)
    files = await run_in_threadpool(
        _media_files, answer.model_copy(update={"videos": answer.videos[: len(paths)]}), settings
    )
    folder = settings.upload_dir / trace_id
    try:
        for k, upload in enumerate(uploads, start=len(paths) + 1):
            name = _safe_name(upload.filename or f"video{k}.mp4")
            files.append(await run_in_threadpool(_save_upload, upload, folder / f"{k}-{name}", name, settings))
    except BaseException:
        drop_uploads(settings, trace_id)  # a refused upload leaves nothing behind, not even its folder
        raise
    videos = [VideoInput(path=name) for name, _, _ in files]
    return Prepared(trace_id, answer.model_copy(update={"videos": videos}), files)


def _safe_name(name: str) -> str:
    """The base name of an uploaded file, with only harmless characters."""
    base = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(name.replace("\\", "/")).name).strip("._")
    return base[:100] or "video.mp4"


def _save_upload(upload: UploadFile, target: Path, name: str, settings: Settings) -> tuple[str, str, float]:
    target.parent.mkdir(parents=True, exist_ok=True)
    upload.file.seek(0)
    with target.open("wb") as out:
        shutil.copyfileobj(upload.file, out)
    try:
        duration = checked_video(target, name, settings.max_video_seconds, int(settings.max_upload_mb * (1 << 20)))
    except ApiError:
        target.unlink(missing_ok=True)
        raise
    return name, str(target), duration
