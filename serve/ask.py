"""`agentcvr ask`: one question over local video files, through the `/answer` path (request checks -> episode ->
agent), with the steps printed as they happen."""

from __future__ import annotations

import uuid
from pathlib import Path

from pydantic import ValidationError
from rich.console import Console
from rich.text import Text

from agentcvr.terminal import error_text
from agentcvr.trace import Step
from serve.episodes import build_episode, check_request
from serve.errors import ApiError
from serve.safety import checked_video
from serve.schemas import AnswerRequest, VideoInput
from serve.settings import load_settings


def step_line(index: int, step: Step) -> Text:
    """One step for the terminal: turn, call (long arguments cut) and the first line of what came back. Calls,
    observations and errors were written by a model or a video, so they are `Text`, never markup."""
    if step.tool is None:
        return Text(f"{step.turn + 1:>2} {step.kind}: {step.error}", style="red")
    args = ", ".join(f"{k}={_cut(repr(v), 60)}" for k, v in step.arguments.items())
    seconds = step.policy_seconds + step.tool_seconds
    line = Text.assemble(f"{step.turn + 1:>2} ", (step.tool, "bold"), f"({args}) ", (f"{seconds:.1f} s", "dim"))
    seen = (step.error or step.observation or "").strip().splitlines()
    if seen:
        line.append(f"\n   {_cut(seen[0], 140)}")
        if len(seen) > 1:
            line.append(f" (+{len(seen) - 1} lines)", style="dim")
    return line


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def ask(
    question: str,
    videos: list[Path],
    options: list[str],
    task: str | None,
    max_turns: int | None,
    policy: str | None,
    base_url: str | None,
    console: Console,
) -> int:
    """Run one question; returns the exit code (0 answered, 1 no answer, 2 bad input)."""
    from agentcvr.agent import Agent
    from agentcvr.components import make_perception, make_policy
    from agentcvr.interfaces import Limits

    settings = load_settings(**{k: v for k, v in {"policy": policy, "policy_url": base_url}.items() if v})
    try:
        request = AnswerRequest(
            question=question,
            options=options,
            task=task,
            videos=[VideoInput(path=str(v)) for v in videos],
            max_turns=max_turns,
        )
        check_request(request, settings)
        files = []
        for video in videos:
            if not video.is_file():
                raise ApiError(404, "video_not_found", f"video {str(video)!r} is not a file")
            limit = int(settings.max_upload_mb * (1 << 20))
            files.append(
                (str(video), str(video.resolve()), checked_video(video, str(video), settings.max_video_seconds, limit))
            )
    except ValidationError as error:
        console.print(error_text(f"{error.errors()[0]['loc']}: {error.errors()[0]['msg']}"))
        return 2
    except ApiError as error:
        console.print(error_text(error.message))
        return 2
    episode = build_episode(uuid.uuid4().hex, request, files)
    try:
        chosen = make_policy(settings.policy, base_url=settings.policy_url, reader=settings.policy_reader)
    except (ValueError, FileNotFoundError) as error:
        console.print(error_text(str(error)))
        return 2
    perception = make_perception("real", **settings.perception_options())
    console.print(
        Text.assemble((question, "bold"), f"  ({episode.task}, {len(files)} videos, policy {settings.policy})")
    )
    agent = Agent(chosen, perception, Limits(max_turns=request.max_turns or settings.max_turns))
    steps = iter(range(10**9))
    try:
        result = agent.run(episode, on_step=lambda step: console.print(step_line(next(steps), step)))
    finally:
        perception.close()
    if result.answer is None:
        console.print(Text.assemble(("no answer", "bold red"), f": {result.failure}"))
        return 1
    console.print(Text.assemble(("answer:", "bold green"), f" {result.answer}  ({result.turns} turns)"))
    return 0
