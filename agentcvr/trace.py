"""Traces: every step of an episode (action, observation, latency, tokens, errors) and its outcome."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

StepKind = Literal["tool", "answer", "format_error", "policy_error", "tool_error"]


class Step(BaseModel):
    """One thing that happened in the loop."""

    turn: int
    kind: StepKind
    tool: str | None = None
    arguments: dict[str, Any] = Field(default_factory=dict)
    observation: str | None = None
    error: str | None = None
    raw: str | None = Field(default=None, description="The policy's raw output when it could not be parsed.")
    thought: str | None = Field(
        default=None, description="The policy's stated reason for this turn, if its protocol has one."
    )
    policy_seconds: float = 0.0
    tool_seconds: float = 0.0
    prompt_tokens: int = 0
    completion_tokens: int = 0


class EpisodeResult(BaseModel):
    """How an episode ended: an answer or a recorded failure, with the trace behind it."""

    episode_id: str
    task: str
    answer: str | None = None
    failure: str | None = None
    turns: int = 0
    steps: list[Step] = Field(default_factory=list)
    forced: bool = Field(default=False, description="The answer came after the turn-limit prompt.")

    @property
    def tool_calls(self) -> int:
        return sum(step.kind in ("tool", "tool_error") for step in self.steps)

    @property
    def tool_errors(self) -> int:
        """Calls whose perception worker failed: the model was told an error instead of an observation."""
        return sum(step.kind == "tool_error" for step in self.steps)

    @property
    def format_errors(self) -> int:
        return sum(step.kind == "format_error" for step in self.steps)

    @property
    def repeated_invalid(self) -> int:
        """Rejected outputs identical to the rejected output before them: a policy stuck on one invalid reply."""
        raws = [step.raw for step in self.steps if step.kind == "format_error"]
        return sum(a == b for a, b in zip(raws, raws[1:], strict=False))

    @property
    def seconds(self) -> float:
        """Policy and perception time of the episode."""
        return sum(step.policy_seconds + step.tool_seconds for step in self.steps)

    @property
    def valid_action_rate(self) -> float:
        """Share of policy turns that parsed into valid actions."""
        return 1.0 - self.format_errors / self.turns if self.turns else 0.0
