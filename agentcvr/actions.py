"""Typed master-agent actions and the OpenAI tool schemas generated from them.

`Observe` asks the visual agent about an interval of one video, `Listen` asks the audio agent for the speech in one,
`Answer` ends the episode. Videos are numbered from 1, in the order the episode lists them; times are seconds
relative to the start of that video (or clip).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

Seconds = Annotated[float, Field(ge=0, description="Seconds from the start of the video.")]


class _Interval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    video: int = Field(ge=1, description="Index of the video, starting at 1.")
    start: Seconds
    end: Seconds

    @field_validator("start", "end")
    @classmethod
    def _finite(cls, value: float) -> float:
        if not math.isfinite(value):
            raise ValueError("time must be a finite number of seconds")
        return value

    @model_validator(mode="after")
    def _ordered(self) -> _Interval:
        if self.end <= self.start:
            raise ValueError(f"end ({self.end}) must be after start ({self.start})")
        return self


class Observe(_Interval):
    """Ask the visual agent what happens in a video between start and end, with a focus prompt."""

    tool: Literal["observe"] = Field(default="observe", exclude=True)
    focus: str = Field(default="", max_length=500, description="What to look for in these frames.")
    num_frames: int = Field(default=16, ge=1, le=128, description="Frames to sample uniformly in the interval.")


class Listen(_Interval):
    """Ask the audio agent for the speech in a video between start and end."""

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
    properties = {k: v for k, v in schema["properties"].items() if k != "tool"}
    for prop in properties.values():
        prop.pop("title", None)
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


def tool_schemas() -> list[dict]:
    """OpenAI tool schemas for all actions, generated from the pydantic models."""
    return [tool_schema(model) for model in TOOL_MODELS.values()]


def action_name(action: Action) -> str:
    return action.tool


def action_arguments(action: Action) -> dict:
    """The tool-call arguments of an action (what a model would have written)."""
    return action.model_dump()
