"""Semantic scripts: what happens in each video, when, and what is said — the simulator's ground truth.

A script is a question (task kind, text, options, answer) plus one timeline per video. Every "video" the agent can
query is a `VideoScript`: a whole video, a clip of a longer source (`source`, `offset`, as PI/PSS/PEA present them),
or one view of a two-view UAV recording (built from a `UAVMoment` timeline). `evidence` lists where the answer can be
found (used by the expert policy and by the answerability checks), never shown to the agent.

Compatible with the published script format through `Script.from_reference` (`videos: {"1": {"duration",
"timeline": [{"start", "end", "visual", "caption"}]}}`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_serializer, model_validator

from agentcvr.episode import Episode, VideoRef


class Event(BaseModel):
    """Something visible (and optionally audible) between start and end, in the video's own seconds."""

    model_config = ConfigDict(extra="forbid")
    start: float = Field(ge=0)
    end: float = Field(gt=0)
    visual: str = Field(min_length=1, description="What the frames show, in plain words.")
    speech: str | None = Field(default=None, description="What is said (speech, captions), if anything.")

    @model_validator(mode="after")
    def _ordered(self) -> Event:
        if self.end <= self.start:
            raise ValueError(f"event end {self.end} must be after start {self.start}")
        return self


class VideoScript(BaseModel):
    """The timeline of one queryable video, clip or view."""

    model_config = ConfigDict(extra="forbid")
    index: int = Field(ge=1)
    duration: float = Field(gt=0)
    name: str = ""
    label: str = ""
    source: str = Field(default="", description="Source video of a clip or view.")
    offset: float = Field(default=0.0, ge=0, description="Clip start inside the source, seconds.")
    events: list[Event] = Field(default_factory=list)

    @model_validator(mode="after")
    def _inside(self) -> VideoScript:
        for event in self.events:
            if event.end > self.duration + 1e-6:
                raise ValueError(f"video {self.index}: event [{event.start}, {event.end}] ends after {self.duration}")
        self.events.sort(key=lambda e: (e.start, e.end))
        return self


class Evidence(BaseModel):
    """Where a fact needed for the answer can be seen or heard."""

    model_config = ConfigDict(extra="forbid")
    video: int = Field(ge=1)
    start: float = Field(ge=0)
    end: float = Field(gt=0)
    tool: Literal["observe", "listen"] = "observe"
    focus: str = ""
    fact: str = Field(description="Text that the observation of this interval must contain.")


class UAVMoment(BaseModel):
    """One instant of a two-view drone recording (the published UAV script format, every 2 s)."""

    timestamp: float = Field(ge=0)
    view_a: str
    view_b: str


EPISODE_FIELDS = ("id", "task", "question", "options", "answer")  # written before `videos` in the flat form
EPISODE_EXTRAS = ("context", "reference")  # written after `videos`


class Script(BaseModel):
    """A generated (or LLM-written) question with the timelines that answer it: the `Episode` the agent sees, one
    `VideoScript` per video, and where the evidence is.

    Built and stored in the flat, published-compatible form (`id`, `task`, `question`, `options`, `answer`,
    `videos`, `context`, `reference`, `evidence`): the question's fields are folded into `episode` on the way in and
    written back flat on the way out. The episode's videos are derived from the timelines, so the two cannot
    disagree. `script.id`, `script.task` ... read the episode; `script.with_episode(id="x")` is a copy with one
    changed.
    """

    model_config = ConfigDict(extra="forbid")
    episode: Episode
    videos: list[VideoScript]
    evidence: list[Evidence] = Field(default_factory=list)

    @model_validator(mode="before")
    @classmethod
    def _fold(cls, data: Any) -> Any:
        """The flat form (question fields beside the timelines) -> `episode`, its videos made from the timelines."""
        if not isinstance(data, dict) or "episode" in data:
            return data
        flat = dict(data)
        if "answer" not in flat:
            raise ValueError("a script needs its 'answer'")
        episode = {key: flat.pop(key) for key in (*EPISODE_FIELDS, *EPISODE_EXTRAS) if key in flat}
        videos = [v if isinstance(v, VideoScript) else VideoScript.model_validate(v) for v in flat.get("videos", [])]
        episode["videos"] = [_video_ref(v) for v in videos]
        return {**flat, "videos": videos, "episode": episode}

    @model_validator(mode="after")
    def _consistent(self) -> Script:
        from agentcvr.tasks import get_task

        get_task(self.task)  # raises with the valid kinds
        if [v.index for v in self.videos] != list(range(1, len(self.videos) + 1)):
            raise ValueError("video indices must run 1..n in order")
        if self.episode.videos != [_video_ref(v) for v in self.videos]:
            raise ValueError(f"script {self.id}: the episode's videos do not match the timelines")
        for item in self.evidence:
            if not 1 <= item.video <= len(self.videos):
                raise ValueError(f"evidence names unknown video {item.video}")
        return self

    @model_serializer(mode="wrap")
    def _flat(self, handler: Any) -> dict[str, Any]:
        data = handler(self)
        episode = data["episode"]
        return {
            **{key: episode[key] for key in EPISODE_FIELDS},
            "videos": data["videos"],
            **{key: episode[key] for key in EPISODE_EXTRAS},
            "evidence": data["evidence"],
        }

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Script:
        """A copy; an update names `episode`, `videos` or `evidence` (the question's fields live in the episode)."""
        stale = sorted(set(update or {}) - set(type(self).model_fields))
        if stale:
            raise ValueError(f"{stale} belong to the episode: use script.with_episode(...)")
        copy = super().model_copy(update=update, deep=deep)
        return type(self).model_validate(dict(copy)) if update else copy  # the checks run on the updated copy

    def with_episode(self, **fields: Any) -> Script:
        """A copy whose episode has these fields changed (id, question, options, answer, context, reference)."""
        return self.model_copy(update={"episode": self.episode.model_copy(update=fields)})

    @property
    def id(self) -> str:
        return self.episode.id

    @property
    def task(self) -> str:
        return self.episode.task

    @property
    def question(self) -> str:
        return self.episode.question

    @property
    def options(self) -> list[str]:
        return self.episode.options

    @property
    def answer(self) -> Any:
        return self.episode.answer

    @property
    def context(self) -> dict[str, Any]:
        return self.episode.context

    @property
    def reference(self) -> dict[str, Any]:
        return self.episode.reference

    @classmethod
    def from_reference(cls, data: dict, **fields: Any) -> Script:
        """Read the published script format (`videos: {"1": {"duration", "timeline": [...]}}`)."""
        videos = []
        for key in sorted(data["videos"], key=int):
            video = data["videos"][key]
            events = [
                Event(start=e["start"], end=e["end"], visual=e["visual"], speech=e.get("caption") or None)
                for e in video.get("timeline", [])
            ]
            videos.append(VideoScript(index=int(key), duration=video["duration"], events=events))
        return cls(videos=videos, **fields)


def _video_ref(video: VideoScript) -> VideoRef:
    return VideoRef(index=video.index, duration=video.duration, name=video.name, offset=video.offset, label=video.label)


def uav_views(moments: list[UAVMoment], duration: float, step: float = 2.0) -> list[VideoScript]:
    """Two view timelines (A = video 1, B = video 2) from a list of two-view moments."""
    views = []
    for index, (label, attr) in enumerate([("view A", "view_a"), ("view B", "view_b")], start=1):
        events = [
            Event(start=m.timestamp, end=min(m.timestamp + step, duration), visual=getattr(m, attr))
            for m in moments
            if getattr(m, attr) and m.timestamp < duration
        ]
        views.append(VideoScript(index=index, duration=duration, label=label, events=events))
    return views


def write_jsonl(scripts: Iterable[Script], path: Path) -> int:
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    with path.open("w") as handle:
        for script in scripts:
            handle.write(script.model_dump_json() + "\n")
            count += 1
    return count


def read_jsonl(path: Path) -> Iterator[Script]:
    """Scripts from a JSONL file; a bad line fails with its line number."""
    with path.open() as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                yield Script.model_validate(json.loads(line))
            except ValueError as error:
                raise ValueError(f"{path}:{number}: not a valid script: {error}") from error
