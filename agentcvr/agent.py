"""The master-agent loop as a LangGraph: a policy node, a tool node and a router.

    policy --(tool actions)--> tools --> policy
    policy --(answer | failure)--> END
    policy --(malformed output, recoveries left)--> policy

The turn count lives in the state; the last allowed turn carries a forced-answer prompt. Policy, perception and
limits are injected through the graph's runtime context, so one compiled graph runs against the simulator or real
perception workers. The loop never raises on model misbehaviour: it ends with an answer or a recorded failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agentcvr import prompts
from agentcvr.actions import Action, Answer, Listen, Observe, action_arguments
from agentcvr.episode import Episode
from agentcvr.parsing import ParsedTurn, ParseError, parse_turn
from agentcvr.protocols import Limits, Perception, Policy
from agentcvr.tasks import get_task
from agentcvr.trace import EpisodeResult, Step


class AgentState(TypedDict):
    messages: list[dict]
    steps: list[Step]
    turns: int
    recoveries: int
    pending: ParsedTurn | None
    answer: str | None
    failure: str | None
    forced: bool


@dataclass(frozen=True)
class AgentContext:
    episode: Episode
    policy: Policy
    perception: Perception
    limits: Limits


def _policy_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    ctx = runtime.context
    messages, steps, turn = list(state["messages"]), list(state["steps"]), state["turns"]
    forced = turn == ctx.limits.max_turns - 1
    if forced and not state["forced"]:
        answer_format = get_task(ctx.episode.task).answer_format
        messages.append({"role": "user", "content": prompts.FORCE_ANSWER.format(answer_format=answer_format)})
    update: dict[str, Any] = {"turns": turn + 1, "forced": forced, "pending": None}
    started = time.perf_counter()
    try:
        output = ctx.policy.act(messages, ctx.episode)
    except Exception as error:  # a policy backend failing (HTTP, OOM...) ends the episode, recorded
        steps.append(Step(turn=turn, kind="policy_error", error=f"{type(error).__name__}: {error}"))
        return {**update, "messages": messages, "steps": steps, "failure": "policy_error"}
    seconds = time.perf_counter() - started
    tokens = {"prompt_tokens": output.prompt_tokens, "completion_tokens": output.completion_tokens}
    parsed = parse_turn(output.content, output.tool_calls, ctx.episode)
    if isinstance(parsed, ParseError) or (forced and not isinstance(parsed.actions[0], Answer)):
        error = parsed if isinstance(parsed, ParseError) else None
        message = str(error) if error else "no answer at the turn limit"
        steps.append(
            Step(turn=turn, kind="format_error", error=message, raw=_raw(output), policy_seconds=seconds, **tokens)
        )
        messages.append(_assistant_message(output, None, turn))
        if forced:
            return {**update, "messages": messages, "steps": steps, "failure": "turn_limit"}
        if state["recoveries"] >= ctx.limits.max_recoveries:
            return {**update, "messages": messages, "steps": steps, "failure": f"format_error: {message}"}
        hint = prompts.recovery_hint(ctx.policy.protocol)  # type: ignore[arg-type]
        messages.append({"role": "user", "content": prompts.RECOVER.format(error=message, hint=hint)})
        return {**update, "messages": messages, "steps": steps, "recoveries": state["recoveries"] + 1}
    messages.append(_assistant_message(output, parsed, turn))
    first = parsed.actions[0]
    if isinstance(first, Answer):
        steps.append(
            Step(
                turn=turn,
                kind="answer",
                tool="answer",
                arguments=action_arguments(first),
                thought=parsed.thought or None,
                policy_seconds=seconds,
                **tokens,
            )
        )
        return {**update, "messages": messages, "steps": steps, "answer": first.answer}
    template = Step(turn=turn, kind="tool", thought=parsed.thought or None, policy_seconds=seconds, **tokens)
    steps.append(template)  # filled in by the tool node
    return {**update, "messages": messages, "steps": steps, "pending": parsed}


def _tools_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    ctx = runtime.context
    parsed = state["pending"]
    assert parsed is not None  # the router only sends turns with actions here
    messages, steps = list(state["messages"]), list(state["steps"])
    template = steps.pop()
    for index, (action, call_id) in enumerate(zip(parsed.actions, parsed.call_ids, strict=True)):
        started = time.perf_counter()
        try:
            observation = _perceive(ctx.perception, ctx.episode, action)
            kind, error = "tool", None
        except Exception as exc:  # a perception worker failing is told to the model and recorded
            observation, kind, error = f"Error: {exc}", "tool_error", f"{type(exc).__name__}: {exc}"
        observation = _repeat_note(steps, action) + observation[: ctx.limits.max_observation_chars]
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
        messages.append(_observation_message(parsed, action, call_id, observation, state["turns"], index))
    return {"messages": messages, "steps": steps, "pending": None}


def _repeat_note(steps: list[Step], action: Action) -> str:
    """Small models loop on one call; saying so (in the observation) nudges them on without refusing the call."""
    arguments = action_arguments(action)
    for step in steps:
        if step.kind == "tool" and step.tool == action.tool and step.arguments == arguments:
            return (
                f"(You already made this exact call at turn {step.turn}: try another video or interval, or answer.)\n"
            )
    return ""


def _route(state: AgentState) -> str:
    if state["answer"] is not None or state["failure"] is not None:
        return END
    return "tools" if state["pending"] is not None else "policy"


def _perceive(perception: Perception, episode: Episode, action: Action) -> str:
    if isinstance(action, Observe):
        return perception.observe(episode, action)
    if isinstance(action, Listen):
        return perception.listen(episode, action)
    raise TypeError(f"not a tool action: {action!r}")


def _raw(output: Any) -> str:
    return output.content if output.content else str(output.tool_calls)


def _assistant_message(output: Any, parsed: ParsedTurn | None, turn: int) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": output.content or ""}
    if output.tool_calls and parsed is not None and parsed.format == "tool_calls":
        message["tool_calls"] = [
            {**call, "id": call_id or f"call_{turn}_{i}"}
            for i, (call, call_id) in enumerate(zip(output.tool_calls, parsed.call_ids, strict=True))
        ]
    return message


def _observation_message(parsed: ParsedTurn, action: Action, call_id: str | None, text: str, turn: int, i: int) -> dict:
    assert isinstance(action, Observe | Listen)
    if parsed.format == "tool_calls":
        return {"role": "tool", "tool_call_id": call_id or f"call_{turn - 1}_{i}", "content": text}
    if parsed.format == "qwen":
        return {"role": "tool", "name": action.tool, "content": text}
    header = f"Result of {action.tool} on video {action.video} [{action.start:g}-{action.end:g} s]:"
    return {"role": "user", "content": f"{header}\n{text}"}


def build_graph():
    """The compiled master-agent graph; invoke it with an `AgentContext`."""
    graph = StateGraph(AgentState, context_schema=AgentContext)
    graph.add_node("policy", _policy_node)
    graph.add_node("tools", _tools_node)
    graph.add_edge(START, "policy")
    graph.add_conditional_edges("policy", _route, ["tools", "policy", END])
    graph.add_edge("tools", "policy")
    return graph.compile()


class Agent:
    """Runs episodes: `Agent(policy, perception, limits).run(episode) -> EpisodeResult`."""

    def __init__(self, policy: Policy, perception: Perception, limits: Limits | None = None):
        self.policy, self.perception, self.limits = policy, perception, limits or Limits()
        self.graph = build_graph()

    def run(self, episode: Episode, on_step: Callable[[Step], None] | None = None) -> EpisodeResult:
        """Run one episode; `on_step` sees each step as soon as it is recorded (a server streams them, and may raise
        from it to stop the run between steps)."""
        state: AgentState = {
            "messages": prompts.initial_messages(episode, self.policy.protocol, self.limits.max_turns),  # type: ignore[arg-type]
            "steps": [],
            "turns": 0,
            "recoveries": 0,
            "pending": None,
            "answer": None,
            "failure": None,
            "forced": False,
        }
        context = AgentContext(episode=episode, policy=self.policy, perception=self.perception, limits=self.limits)
        # Each turn visits at most two nodes; recoveries add one each. The turn counter ends the loop first.
        limit = 2 * (self.limits.max_turns + self.limits.max_recoveries) + 4
        final, seen = state, 0
        for final in self.graph.stream(state, context=context, config={"recursion_limit": limit}, stream_mode="values"):
            # a tool node replaces its turn's placeholder step: only steps before the last are final until it runs
            done = final["steps"] if final["pending"] is None else final["steps"][:-1]
            for step in done[seen:]:
                if on_step is not None:
                    on_step(step)
            seen = max(seen, len(done))
        return EpisodeResult(
            episode_id=episode.id,
            task=episode.task,
            answer=final["answer"],
            failure=final["failure"],
            turns=final["turns"],
            steps=final["steps"],
            forced=final["forced"] and final["answer"] is not None,
        )
