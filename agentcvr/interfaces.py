"""The interfaces behind the agent loop: `Policy` (what to do next) and `Perception` (what the tools return).

Implementations do not inherit from these; anything with the right methods fits.
"""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from pydantic import BaseModel, Field

from agentcvr.actions import Listen, Observe
from agentcvr.episode import Episode


class PolicyOutput(BaseModel):
    """One raw assistant turn: text and/or OpenAI-style tool calls, with token counts."""

    content: str | None = None
    tool_calls: list[dict] | None = None
    prompt_tokens: int = 0
    completion_tokens: int = 0


@runtime_checkable
class Policy(Protocol):
    """Produces the next assistant turn from the conversation so far."""

    protocol: str  # "tools" or "json": which system prompt the policy expects

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput: ...


@runtime_checkable
class Perception(Protocol):
    """Executes observe/listen for an episode and returns text for the master agent."""

    def observe(self, episode: Episode, action: Observe) -> str: ...

    def listen(self, episode: Episode, action: Listen) -> str: ...


class Limits(BaseModel):
    """Bounds on one episode."""

    max_turns: int = Field(
        default=20,
        ge=1,
        description="Policy turns, the answer turn included (re-prompts count); the last is a forced answer, so 1 "
        "answers at once.",
    )
    max_recoveries: int = Field(default=3, ge=0, description="Re-prompts after malformed output before failing.")
    max_observation_chars: int = Field(default=2000, ge=100, description="Tool output is cut to this length.")


MAX_TURNS_HELP = Limits.model_fields["max_turns"].description  # every --max-turns says the same
