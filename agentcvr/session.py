"""The rules of one episode, in one place: what a turn's output means and what the tools give back.

`EpisodeRules` is what the LangGraph nodes of `agentcvr.agent` call, in training and in inference alike:
- `turn_prompt`: the forced-answer prompt on the last allowed turn (recoveries count as turns). The message carries
  an explicit flag (`FORCED_KEY`) that policies read with `forced_turn(messages)`; nobody matches its text. Recovery
  prompts carry `RECOVERY_KEY` the same way (`is_recovery(message)`).
- `judge`: validate a policy output against the episode (`agentcvr.parsing`) and decide: tool calls to run, an
  answer, a re-prompt with the recovery hint (bounded by `max_recoveries`) or a recorded failure.
- `execute`: run the perception for each call; an error is told to the model and recorded as a `tool_error`;
  observations are cut to `max_observation_chars`, and a repeated call gets a note in front of its observation.
The rules hold no state of their own: the counters (turns, recoveries) and the trace live in the graph's state.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentcvr import prompts
from agentcvr.actions import Action, Answer, Listen, Observe, action_arguments
from agentcvr.episode import Episode, question_focus
from agentcvr.interfaces import Limits, Perception, PolicyOutput
from agentcvr.parsing import ParsedTurn, ParseError, parse_turn
from agentcvr.tasks import get_task
from agentcvr.text import stamped_lines
from agentcvr.trace import Step

FORCED_KEY = "forced_answer"  # set (True) on the loop's forced-answer message; chat templates ignore it
RECOVERY_KEY = "recovery"  # set (True) on the loop's re-prompt after a malformed turn
LOOP_KEYS = (FORCED_KEY, RECOVERY_KEY)


def forced_turn(messages: list[dict]) -> bool:
    """Whether the policy is asked to answer now: the last message is the loop's forced-answer prompt."""
    return bool(messages) and messages[-1].get(FORCED_KEY) is True


def is_recovery(message: dict) -> bool:
    """Whether a message is the loop's re-prompt after a malformed turn."""
    return message.get(RECOVERY_KEY) is True


def wire_messages(messages: list[dict]) -> list[dict]:
    """The messages without the loop's own flags, for servers that reject unknown message fields."""
    return [{k: v for k, v in m.items() if k not in LOOP_KEYS} for m in messages]


@dataclass
class Judgement:
    """What one policy turn led to: messages and steps to append, and at most one of pending/answer/failure."""

    messages: list[dict] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)
    pending: ParsedTurn | None = None
    answer: str | None = None
    failure: str | None = None
    recovered: bool = False  # a recovery prompt was added (the recovery counter goes up)


@dataclass(frozen=True)
class EpisodeRules:
    """The rules of one episode for one policy protocol (`tools` or `json`)."""

    episode: Episode
    perception: Perception
    limits: Limits
    protocol: str = "tools"

    def initial_messages(self) -> list[dict]:
        return prompts.initial_messages(self.episode, self.protocol, self.limits.max_turns)  # type: ignore[arg-type]

    def is_forced(self, turn: int) -> bool:
        """The last allowed turn (0-based `turn`) must answer."""
        return turn == self.limits.max_turns - 1

    def turn_prompt(self, turn: int, already_forced: bool) -> dict | None:
        """The forced-answer prompt to add before this turn, once."""
        if not self.is_forced(turn) or already_forced:
            return None
        answer_format = get_task(self.episode.task).answer_format
        return {"role": "user", "content": prompts.FORCE_ANSWER.format(answer_format=answer_format), FORCED_KEY: True}

    def judge(self, output: PolicyOutput, turn: int, recoveries: int, seconds: float) -> Judgement:
        """Validate one policy output and say what follows from it."""
        forced = self.is_forced(turn)
        tokens = {"prompt_tokens": output.prompt_tokens, "completion_tokens": output.completion_tokens}
        parsed = parse_turn(output.content, output.tool_calls, self.episode)
        if isinstance(parsed, ParseError) or (forced and not isinstance(parsed.actions[0], Answer)):
            message = (
                str(parsed)
                if isinstance(parsed, ParseError)
                else f"called {parsed.actions[0].tool} on the last allowed turn, which must answer (the turn limit)"
            )
            step = Step(
                turn=turn, kind="format_error", error=message, raw=_raw(output), policy_seconds=seconds, **tokens
            )
            judged = Judgement(messages=[assistant_message(output, None, turn)], steps=[step])
            if forced:
                judged.failure = "turn_limit"
            elif recoveries >= self.limits.max_recoveries:
                judged.failure = f"format_error: {message}"
            else:
                hint = prompts.recovery_hint(self.protocol)  # type: ignore[arg-type]
                recover = prompts.RECOVER.format(error=message, hint=hint)
                judged.messages.append({"role": "user", "content": recover, RECOVERY_KEY: True})
                judged.recovered = True
            return judged
        judged = Judgement(messages=[assistant_message(output, parsed, turn)])
        first = parsed.actions[0]
        if isinstance(first, Answer):
            arguments = action_arguments(first)
            judged.steps.append(
                Step(
                    turn=turn,
                    kind="answer",
                    tool="answer",
                    arguments=arguments,
                    thought=parsed.thought or None,
                    policy_seconds=seconds,
                    **tokens,
                )
            )
            judged.answer = first.answer
            return judged
        template = Step(turn=turn, kind="tool", thought=parsed.thought or None, policy_seconds=seconds, **tokens)
        judged.steps.append(template)  # filled in by `execute`
        judged.pending = parsed
        return judged

    def execute(self, parsed: ParsedTurn, template: Step, earlier: list[Step]) -> tuple[list[Step], list[dict]]:
        """Run the tool calls of one turn: the steps that replace the turn's `template` step, and the tool messages."""
        steps: list[Step] = []
        messages: list[dict] = []
        for index, (action, call_id) in enumerate(zip(parsed.actions, parsed.call_ids, strict=True)):
            started = time.perf_counter()
            try:
                observation = self.perceive(action, earlier)
                kind, error = "tool", None
            except Exception as exc:  # a perception worker failing is told to the model and recorded
                observation, kind, error = f"Error: {exc}", "tool_error", f"{type(exc).__name__}: {exc}"
            notes = repeat_note(earlier + steps, action) + cut_note(action)
            observation = notes + observation[: self.limits.max_observation_chars]
            first = index == 0
            steps.append(
                template.model_copy(
                    update={
                        "kind": kind,
                        "tool": action.tool,
                        "arguments": action_arguments(action),
                        "observation": observation,
                        "error": error,
                        "tool_seconds": time.perf_counter() - started,
                        "thought": template.thought if first else None,
                        "policy_seconds": template.policy_seconds if first else 0.0,
                        "prompt_tokens": template.prompt_tokens if first else 0,
                        "completion_tokens": template.completion_tokens if first else 0,
                    }
                )
            )
            messages.append(observation_message(parsed, action, call_id, observation, template.turn, index))
        return steps, messages

    def perceive(self, action: Action, earlier: list[Step]) -> str:
        """Route a call to its worker. A look without a focus searches for the question, its options and what the
        looks of `earlier` turns showed (not this turn's: calls made together do not see each other)."""
        if isinstance(action, Observe):
            if not action.focus.strip():
                found = [line for step in earlier if step.tool == "observe" for line in stamped_lines(step.observation)]
                action = action.model_copy(update={"focus": question_focus(self.episode, found=found)})
            return self.perception.observe(self.episode, action)
        if isinstance(action, Listen):
            return self.perception.listen(self.episode, action)
        raise TypeError(f"not a tool action: {action!r}")


def repeat_note(steps: list[Step], action: Action) -> str:
    """Small models loop on one call; saying so (in the observation) nudges them on without refusing the call."""
    arguments = action_arguments(action)
    for step in steps:
        if step.kind == "tool" and step.tool == action.tool and step.arguments == arguments:
            return (
                f"(You already made this exact call at turn {step.turn}: try another video or interval, or answer.)\n"
            )
    return ""


def cut_note(action: Action) -> str:
    """Where a call ran past its video's end (`parsing`: looked at up to the end), the observation says how long the
    video is, so the next call can be sized for it."""
    if isinstance(action, Observe | Listen) and action.asked_end is not None:
        return (
            f"(Video {action.video} ends at {action.end:g} s, not {action.asked_end:g}: "
            f"this is {action.start:g}-{action.end:g} s.)\n"
        )
    return ""


def _raw(output: PolicyOutput) -> str:
    return output.content if output.content else str(output.tool_calls)


def assistant_message(output: PolicyOutput, parsed: ParsedTurn | None, turn: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": output.content or ""}
    if output.tool_calls and parsed is not None and parsed.format == "tool_calls":
        message["tool_calls"] = [
            {**call, "id": call_id or f"call_{turn}_{i}"}
            for i, (call, call_id) in enumerate(zip(output.tool_calls, parsed.call_ids, strict=True))
        ]
    return message


def observation_message(parsed: ParsedTurn, action: Action, call_id: str | None, text: str, turn: int, i: int) -> dict:
    assert isinstance(action, Observe | Listen)
    if parsed.format == "tool_calls":
        return {"role": "tool", "tool_call_id": call_id or f"call_{turn}_{i}", "content": text}
    if parsed.format == "qwen":
        return {"role": "tool", "name": action.tool, "content": text}
    header = f"Result of {action.tool} on video {action.video} [{action.start:g}-{action.end:g} s]:"
    return {"role": "user", "content": f"{header}\n{text}"}
