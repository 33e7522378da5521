"""Where the scan's plan and the search's part, in tokens, and the search's start to force there.

After the scan the search teacher's conversation and the scan teacher's share every token up to the policy turn
that follows (`{"action": "` then `answer` or `obs`erve, in the JSON protocol): one token chooses the plan. A warm
start trained on both plans puts a few percent on the search there (smol-v13: 8 % on MOC at T=1), so a GRPO group of 8
rarely holds a search, and five CPU updates on MOC learned to avoid it (docs/gpu_grpo.md, session 31). Guided
exploration (`grpo.forced_search_share`) writes the search's first tokens into a share of each group's rollouts at
that turn, the policy writing the rest; the forced tokens stay in the loss, so the choice itself is trained by the
group's advantage (off-policy for those tokens, as in LUFFY's mixed-policy GRPO, without importance weights, which
would scale the rare choice's gradient back down by its probability).

Raising the search raised looking again after it (sessions 37-38: P(stop after the search) 84 -> 67 % in four
updates, and the greedy master searched until its calls broke), and a cost per turn did not hold it. `stop_anchors`
gives `grpo.stop_anchor` the search teacher's stop after its looks, as a supervised term beside the GRPO loss.

`benchmarks/plan_odds.py` reads the odds at the same tokens; `benchmarks/forced_branch.py` scores greedy episodes
forced the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cached_property

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits, Perception
from agentcvr.policies.hf_policy import prompt_ids
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.search import scan_then_search
from agentcvr.script import Script
from train.rollout import Start

Anchor = tuple[list[int], int]  # a context's token ids and the token the teacher writes next


def parting_ids(
    tokenizer, tools: list[dict] | None, scan: list[dict], search: list[dict]
) -> tuple[list[int], int, int] | None:
    """The token ids the two rendered conversations share, and each one's next token there (None: they never part)."""
    from train.sft import render
    from train.trajectories import for_template

    texts = render(tokenizer, [for_template(scan), for_template(search)], tools)  # as the warm start read them
    a, b = (tokenizer(text, add_special_tokens=False)["input_ids"] for text in texts)
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), None)
    if shared is None:
        return None
    return list(a[:shared]), a[shared], b[shared]


def stop_point(tokenizer, tools: list[dict] | None, search: list[dict]) -> tuple[list[int], int, int] | None:
    """Where the search's conversation answers after its looks: the ids before that turn's first own token, the
    answer's token there and the token of looking once more (the search's last look made again); None without a look
    to repeat. The decision after the search is the same token as after the scan, in a longer context (session 34:
    training it up after the scan raised it here too, and the master never answered)."""
    turns = [i for i, m in enumerate(search) if m["role"] == "assistant"]
    if len(turns) < 2:
        return None
    again = search[: turns[-1]] + [search[turns[-2]]]
    return parting_ids(tokenizer, tools, search, again)


def search_start(tokenizer, tools: list[dict] | None, scan: list[dict], search: list[dict]) -> Start | None:
    """The assistant turn (counted from 0) where the scan's and the search's conversations part, and the search's
    tokens of that turn up to and with the first that differs; None where they never part (the search makes no
    call)."""
    from train.trajectories import for_template

    parted = parting_ids(tokenizer, tools, scan, search)
    if parted is None:
        return None
    shared, _, search_token = parted
    answer_at = max(i for i, m in enumerate(scan) if m["role"] == "assistant")  # the scan answers in its last turn
    prompt = prompt_ids(tokenizer, for_template(scan[:answer_at]), tools)
    if shared[: len(prompt)] != prompt:
        raise ValueError("the rendered conversation does not start with the prompt of the turn where the plans part")
    turn = sum(m["role"] == "assistant" for m in scan[:answer_at])
    return turn, shared[len(prompt) :] + [search_token]


class TeacherConversations:
    """Each script's episode as the scan teacher and as the search teacher converse it (the teachers' own looks at
    `frames` frames a scan look), each conversed once, when first read: `search_starts` and `stop_anchors` read the
    same conversations."""

    def __init__(
        self, scripts: Sequence[Script], perception: Perception, limits: Limits, protocol: str, frames: int
    ) -> None:
        table: Mapping[str, Script] = {s.id: s for s in scripts}
        self.episodes = [s.episode for s in scripts]
        self._scan = Agent(ScanTeacher(table, protocol=protocol, frames=frames), perception, limits)
        self._search = Agent(scan_then_search(table, protocol, 1, frames), perception, limits)

    @cached_property
    def scan(self) -> dict[str, list[dict]]:
        """The scan teacher's conversation by episode id."""
        return {episode.id: self._scan.converse(episode)[1] for episode in self.episodes}

    @cached_property
    def search(self) -> dict[str, list[dict]]:
        """The search teacher's conversation by episode id."""
        return {episode.id: self._search.converse(episode)[1] for episode in self.episodes}


def search_starts(conversations: TeacherConversations, tokenizer, tools: list[dict] | None) -> dict[str, Start]:
    """`search_start` of each episode whose two plans part, by episode id."""
    starts = {}
    for key, search in conversations.search.items():
        start = search_start(tokenizer, tools, conversations.scan[key], search)
        if start is not None:
            starts[key] = start
    return starts


def stop_anchors(conversations: TeacherConversations, tokenizer, tools: list[dict] | None) -> dict[str, Anchor]:
    """The search teacher's stop after its looks (`stop_point`: the context and its answer token), by episode id, for
    each episode (where the search makes no call of its own, its stop after the scan)."""
    anchors = {}
    for key, search in conversations.search.items():
        stop = stop_point(tokenizer, tools, search)
        if stop is not None:
            anchors[key] = (stop[0], stop[1])
    return anchors
