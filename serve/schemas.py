"""The HTTP contract of `/answer`: request and response models, apart from the core types they are turned into."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentcvr.trace import Step

Status = Literal["success", "error", "timeout", "cancelled", "running"]


class VideoInput(BaseModel):
    """A video named by its path under the server's media root."""

    model_config = ConfigDict(extra="forbid")

    path: str = Field(min_length=1, max_length=1024, description="Path relative to the media root, e.g. 'a/cat.mp4'.")


class AnswerRequest(BaseModel):
    """One multi-video question. Only `question` and `videos` are required."""

    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "question": "Which video shows a dog running?",
                    "options": ["A. Video 1", "B. Video 2"],
                    "task": "NC",
                    "videos": [{"path": "pets/cat.mp4"}, {"path": "pets/dog.mp4"}],
                    "max_turns": 6,
                }
            ]
        },
    )

    question: str = Field(min_length=1, description="The question, in plain text (at most the server's limit).")
    options: list[str] = Field(
        default_factory=list, description="Answer options, e.g. ['A. Video 1', 'B. Video 2']; empty for open questions."
    )
    task: str | None = Field(
        default=None,
        description="CrossVid task kind (BU, NC, CC, PEA, PI, FSA, PSS, MSR, MOC, CCQA); default: NC with options, "
        "CCQA without.",
    )
    videos: list[VideoInput] = Field(min_length=1, description="The videos, numbered 1.. in this order.")
    max_turns: int | None = Field(
        default=None,
        ge=1,
        description="Policy turns before a forced answer; default and largest allowed: the server's max_turns "
        "setting (a larger value gets 422).",
    )

    @field_validator("question")
    @classmethod
    def _question_text(cls, question: str) -> str:
        if not question.strip():
            raise ValueError("question must not be blank")
        return question

    @field_validator("options")
    @classmethod
    def _options_text(cls, options: list[str]) -> list[str]:
        if any(not option.strip() for option in options):
            raise ValueError("options must not be empty strings")
        return options


class StepOut(BaseModel):
    """One step of a run as the API shows it (kept apart from the core `Step`, so the contract is explicit)."""

    turn: int = Field(description="Policy turn, from 0; a turn with several tool calls gives several steps.")
    kind: Literal["tool", "answer", "format_error", "policy_error", "tool_error"] = Field(
        description="tool: a call that returned; answer: the final answer; format_error: output the parser refused; "
        "policy_error: the master failed; tool_error: perception failed (the master was told)."
    )
    tool: str | None = Field(default=None, description="observe, listen or answer.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The call's arguments, e.g. {video, start, end, focus, num_frames}."
    )
    observation: str | None = Field(default=None, description="What the tool returned to the master.")
    error: str | None = Field(default=None, description="What went wrong, for the error kinds.")
    raw: str | None = Field(default=None, description="The master's raw output when it could not be parsed.")
    thought: str | None = Field(default=None, description="The master's stated reason for this turn, if it gave one.")
    policy_seconds: float = Field(default=0.0, description="Seconds the master took for this turn.")
    tool_seconds: float = Field(default=0.0, description="Seconds perception took for this call.")
    prompt_tokens: int = Field(default=0, description="Prompt tokens of this turn.")
    completion_tokens: int = Field(default=0, description="Completion tokens of this turn.")

    @classmethod
    def of(cls, step: Step) -> StepOut:
        return cls(**{name: getattr(step, name) for name in cls.model_fields})


class TraceStep(BaseModel):
    """One step of the run: the action, what came back, timings (s) and tokens."""

    index: int = Field(description="Position in the trace, from 0; the SSE event id of this step is index + 1.")
    step: StepOut


class Timings(BaseModel):
    total_seconds: float = Field(description="Wall time of the run.")
    policy_seconds: float = Field(description="Time spent in the master policy.")
    tool_seconds: float = Field(description="Time spent in perception (observe/listen).")
    prompt_tokens: int = Field(default=0, description="Prompt tokens over all turns.")
    completion_tokens: int = Field(default=0, description="Completion tokens over all turns.")


class AnswerResponse(BaseModel):
    """The outcome of a run: the answer (or why there is none), the whole trace and where to view it."""

    trace_id: str = Field(description="Id of the stored trace: GET /traces/{trace_id}, /traces/{trace_id}/view.")
    status: Status = Field(
        description="success: an answer; error: the run failed; timeout: past the time limit; cancelled: the client "
        "went away or the server shut down (message says which); running: not over yet (GET /traces/{id})."
    )
    answer: str | None = Field(default=None, description="The agent's final answer, in the task's answer format.")
    message: str | None = Field(default=None, description="Why there is no answer, when status is not success.")
    task: str
    question: str
    options: list[str] = Field(default_factory=list)
    videos: list[str] = Field(description="The videos as the request named them (upload names for uploads).")
    turns: int = 0
    steps: list[StepOut] = Field(default_factory=list, description="Every step: action, observation, error, timings.")
    timings: Timings
    created: float = Field(description="Unix time the run started.")
    viewer_url: str | None = Field(
        default=None,
        description="The trace's HTML viewer, relative to the server; with an API key set, a signed link a browser "
        "can open without the key (page and thumbnails), valid for the server's viewer_link_seconds.",
    )


class ErrorBody(BaseModel):
    """Every error response has this shape."""

    code: str = Field(description="Machine-readable reason, e.g. 'invalid_request', 'path_outside_media_root'.")
    message: str = Field(description="What is wrong, naming the field or limit.")
