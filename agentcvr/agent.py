"""The master-agent loop as a LangGraph: a policy node, a tool node and a router.

    policy --(tool actions)--> tools --> policy
    policy --(answer | failure)--> END
    policy --(malformed output, recoveries left)--> policy

The turn count lives in the state; the rules of a turn (forced answer, validation, recoveries, tool execution) are
`agentcvr.session.EpisodeRules`, which both nodes call. Policy, perception and limits are injected through the
graph's runtime context, so one compiled graph runs against the simulator or real perception workers.
The loop never raises on model misbehaviour: it ends with an answer or a recorded failure.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypedDict

from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime

from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Perception, Policy
from agentcvr.parsing import ParsedTurn
from agentcvr.session import EpisodeRules
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

    @property
    def rules(self) -> EpisodeRules:
        return EpisodeRules(self.episode, self.perception, self.limits, self.policy.protocol)


def _policy_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    ctx = runtime.context
    rules = ctx.rules
    messages, steps, turn = list(state["messages"]), list(state["steps"]), state["turns"]
    prompt = rules.turn_prompt(turn, state["forced"])
    if prompt is not None:
        messages.append(prompt)
    update: dict[str, Any] = {"turns": turn + 1, "forced": rules.is_forced(turn), "pending": None}
    started = time.perf_counter()
    try:
        output = ctx.policy.act(messages, ctx.episode)
    except Exception as error:  # a policy backend failing (HTTP, OOM...) ends the episode, recorded
        steps.append(Step(turn=turn, kind="policy_error", error=f"{type(error).__name__}: {error}"))
        return {**update, "messages": messages, "steps": steps, "failure": "policy_error"}
    judged = rules.judge(output, turn, state["recoveries"], time.perf_counter() - started)
    return {
        **update,
        "messages": messages + judged.messages,
        "steps": steps + judged.steps,
        "pending": judged.pending,
        "answer": judged.answer,
        "failure": judged.failure,
        "recoveries": state["recoveries"] + judged.recovered,
    }


def _tools_node(state: AgentState, runtime: Runtime[AgentContext]) -> dict[str, Any]:
    parsed = state["pending"]
    assert parsed is not None  # the router only sends turns with actions here
    steps = list(state["steps"])
    template = steps.pop()
    done, messages = runtime.context.rules.execute(parsed, template, steps)
    return {"messages": state["messages"] + messages, "steps": steps + done, "pending": None}


def _route(state: AgentState) -> str:
    if state["answer"] is not None or state["failure"] is not None:
        return END
    return "tools" if state["pending"] is not None else "policy"


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
        return self.converse(episode, on_step)[0]

    def converse(
        self, episode: Episode, on_step: Callable[[Step], None] | None = None, messages: list[dict] | None = None
    ) -> tuple[EpisodeResult, list[dict]]:
        """Run one episode and return its conversation too (the warm start trains on it). `messages` replaces the
        episode's first messages (a training prompt with a hint appended)."""
        rules = EpisodeRules(episode, self.perception, self.limits, self.policy.protocol)
        state: AgentState = {
            "messages": list(messages) if messages is not None else rules.initial_messages(),
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
        result = EpisodeResult(
            episode_id=episode.id,
            task=episode.task,
            answer=final["answer"],
            failure=final["failure"],
            turns=final["turns"],
            steps=final["steps"],
            forced=final["forced"] and final["answer"] is not None,
        )
        return result, final["messages"]
