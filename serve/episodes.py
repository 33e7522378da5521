"""Request -> episode: the one path `/answer` and `agentcvr ask` share (videos already checked by `serve.safety`)."""

from __future__ import annotations

from agentcvr.episode import Episode, VideoRef
from agentcvr.tasks.registry import TASK_ORDER, TASKS
from serve.errors import ApiError
from serve.schemas import AnswerRequest
from serve.settings import Settings


def check_request(request: AnswerRequest, settings: Settings) -> None:
    """The limits a schema cannot know (they come from settings); `ApiError` 422 naming the field."""
    if len(request.question) > settings.max_question_chars:
        raise ApiError(
            422,
            "question_too_long",
            f"question has {len(request.question)} characters; at most {settings.max_question_chars}",
        )
    if len(request.videos) > settings.max_videos:
        raise ApiError(422, "too_many_videos", f"videos has {len(request.videos)} items; at most {settings.max_videos}")
    if len(request.options) > settings.max_options:
        raise ApiError(
            422, "too_many_options", f"options has {len(request.options)} items; at most {settings.max_options}"
        )
    if request.max_turns is not None and request.max_turns > settings.max_turns:
        raise ApiError(422, "max_turns_too_large", f"max_turns is {request.max_turns}; at most {settings.max_turns}")
    if request.task is not None and request.task not in TASKS:
        raise ApiError(422, "unknown_task", f"task {request.task!r} is not one of {', '.join(TASK_ORDER)}")


def build_episode(trace_id: str, request: AnswerRequest, files: list[tuple[str, str, float]]) -> Episode:
    """The episode of a request; `files` are (name as requested, file path, duration s) in the request's order."""
    task = request.task or ("NC" if request.options else "CCQA")
    videos = [
        VideoRef(index=i, duration=duration, name=name, path=path)
        for i, (name, path, duration) in enumerate(files, start=1)
    ]
    return Episode(id=trace_id, task=task, question=request.question, options=request.options, videos=videos)
