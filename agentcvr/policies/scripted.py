"""A deterministic policy that replays given outputs: drives the real graph in tests and examples."""

from __future__ import annotations

from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput


class ScriptedPolicy:
    """Returns `outputs` in order (strings as text, dicts as PolicyOutput fields); raises when they run out."""

    def __init__(self, outputs: list[str | dict | PolicyOutput], protocol: str = "tools"):
        self.outputs = list(outputs)
        self.protocol = protocol
        self.seen: list[list[dict]] = []  # the messages of every call, for assertions

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        self.seen.append(list(messages))  # a snapshot: the loop appends to its list afterwards
        if not self.outputs:
            raise RuntimeError("ScriptedPolicy ran out of outputs")
        item = self.outputs.pop(0)
        if isinstance(item, PolicyOutput):
            return item
        if isinstance(item, dict):
            return PolicyOutput(**item)
        return PolicyOutput(content=item)
