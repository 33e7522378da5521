"""Typed master-agent actions and the OpenAI tool schemas generated from them.

`Observe` asks the visual agent about an interval of one video, `Listen` asks the audio agent for the speech in one,
`Answer` ends the episode. Videos are numbered from 1, in the order the episode lists them; times are seconds
relative to the start of that video (or clip).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator, model_validator

Seconds = Annotated[float, Field(ge=0)]


class _Interval(BaseModel):
    """A video and an optional interval of it: an omitted `start` is 0, an omitted `end` the video's end, so a call
    without times looks at the whole video (small models scan that way; zooming in with times gives detail)."""

    model_config = ConfigDict(extra="forbid")

    video: int = Field(ge=1, description="Index of the video, starting at 1.")
    start: Seconds | None = Field(default=None, description="Seconds from the start of the video; omit for 0.")
    end: Seconds | None = Field(default=None, description="Seconds from the start of the video; omit for its end.")
    # The end the call asked for where it ran past the video and was cut to the video's end (not a tool argument).
    _asked_end: float | None = PrivateAttr(default=None)

    @field_validator("video", mode="before")
    @classmethod
    def _not_bool(cls, value: object) -> object:
        # JSON `true` would pass as 1 in pydantic's lax mode; a video number is never a boolean.
        if isinstance(value, bool):
            raise ValueError("a video number must be an integer, not true/false")
        return value

    @field_validator("start", "end")
    @classmethod
    def _finite(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("time must be a finite number of seconds")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> _Interval:
        if self.start is not None and self.end is not None and self.end <= self.start:
            raise ValueError(f"end ({self.end:g}) must be after start ({self.start:g})")
        return self

    @property
    def whole(self) -> bool:
        """Whether the call gave no times (a scan of the whole video)."""
        return self.start is None and self.end is None

    def within(self, duration: float) -> tuple[float, float]:
        """The interval in seconds on a video of this duration, omitted ends filled in."""
        return (self.start or 0.0, duration if self.end is None else self.end)

    @property
    def asked_end(self) -> float | None:
        """The end the call asked for, where it ran past the video and the interval was cut at the video's end."""
        return self._asked_end

    def cut_at(self, duration: float, tolerance: float = 0.0) -> Self:
        """This interval with omitted times filled in and its end cut at `duration`; the asked end is kept where it ran
        more than `tolerance` seconds past (less is the rounding of durations, not a call sized for another video)."""
        start, end = self.within(duration)
        cut = self.model_copy(update={"start": start, "end": min(end, duration)})
        cut._asked_end = end if end > duration + tolerance else None
        return cut


DEFAULT_FRAMES = 16  # frames a look samples when it names none
MAX_FRAMES = 128  # the published prompts' cap on frames per call


class Observe(_Interval):
    """Ask the visual agent what happens in a video (between start and end, or the whole video), with a focus prompt."""

    tool: Literal["observe"] = Field(default="observe", exclude=True)
    focus: str = Field(
        default="", max_length=500, description="What to look for in these frames (left out: the question and options)."
    )
    num_frames: int = Field(
        default=DEFAULT_FRAMES, ge=1, le=MAX_FRAMES, description="Frames to sample uniformly in the interval."
    )


class Listen(_Interval):
    """Ask the audio agent for the speech in a video (between start and end, or the whole video)."""

    tool: Literal["listen"] = Field(default="listen", exclude=True)


class Answer(BaseModel):
    """Give the final answer, in the format the question asks for."""

    model_config = ConfigDict(extra="forbid")
    tool: Literal["answer"] = Field(default="answer", exclude=True)
    answer: str = Field(description="The final answer, e.g. 'B', 'AC', '3->1->2' or '12.5,20.0'.")

    @field_validator("answer", mode="before")
    @classmethod
    def _as_text(cls, value: object) -> str:
        # The published protocol sends intervals as [s, e] lists; we keep answers as text.
        if isinstance(value, list | tuple):
            return ",".join(str(v) for v in value)
        if isinstance(value, int | float) and not isinstance(value, bool):
            return str(value)
        return value  # type: ignore[return-value]


Action = Observe | Listen | Answer
TOOL_MODELS: dict[str, type[Observe] | type[Listen] | type[Answer]] = {
    "observe": Observe,
    "listen": Listen,
    "answer": Answer,
}


def tool_schema(model: type[BaseModel]) -> dict:
    """The OpenAI function-tool schema of one action model (the `tool` tag is not an argument)."""
    schema = model.model_json_schema()
    properties = {k: _omittable(v) for k, v in schema["properties"].items() if k != "tool"}
    required = [k for k in schema.get("required", []) if k != "tool"]
    name = next(k for k, v in TOOL_MODELS.items() if v is model)
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": (model.__doc__ or "").strip(),
            "parameters": {"type": "object", "properties": properties, "required": required},
        },
    }


def _omittable(prop: dict) -> dict:
    """A property as a model should read it: an optional `X | None = None` field is just `X`, left out when unused."""
    prop = {k: v for k, v in prop.items() if k != "title"}
    variants = prop.pop("anyOf", None)
    if variants is not None:
        kept = [v for v in variants if v != {"type": "null"}]
        prop = {**kept[0], **prop} if len(kept) == 1 else {"anyOf": kept, **prop}
        if prop.get("default", 0) is None:
            del prop["default"]
    return prop


def tool_schemas() -> list[dict]:
    """OpenAI tool schemas for all actions, generated from the pydantic models."""
    return [tool_schema(model) for model in TOOL_MODELS.values()]


def action_name(action: Action) -> str:
    return action.tool


def action_arguments(action: Action) -> dict:
    """The tool-call arguments of an action (what a model would have written)."""
    return action.model_dump()
