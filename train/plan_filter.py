"""GRPO prompts where the plan matters: the episodes whose reward changes with the choice to search after the scan.

A warm start of the search teacher (`sft.teacher=search`) answers after the scan or takes the search's turn; GRPO can
only prefer one where a group holds both and they earn different rewards. Most episodes score the same either way
(the training seed's GRPO scripts 30-129: MOC 13 of 100, MSR 37 of 100 differ), so most groups teach nothing and a
CPU batch of 2 prompts (13 minutes) usually has no signal. DAPO drops such groups after sampling them; this drops
their prompts before, from the two teachers' outcomes: the scan's looks and the search teacher's (scan plus search
turn), the run's reader answering both, scored by the run's correctness reward. The scripts are training data, as the
reward's are. It does not make the policy sample the search: from smol-v13 (P(search) 13 % at T=1.3) five CPU updates
on such MOC prompts learned to avoid it (docs/gpu_grpo.md, session 31).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from agentcvr.agent import Agent
from agentcvr.components import make_policy
from agentcvr.interfaces import Limits, Perception
from agentcvr.reading import reads
from agentcvr.script import Script
from train.rewards import score


def plans_differ(
    scripts: Sequence[Script], perception: Perception, limits: Limits, reader: str, frames: int, dense: bool
) -> list[Script]:
    """The scripts (of kinds the reader answers) whose correctness reward differs between answering after the scan
    and after the search teacher's turn. A master is asked only where the reader matches nothing: a seeded random one,
    the same in both plans."""
    agents = {
        looks: Agent(make_policy("random", reader=reader, reader_looks=looks, scan_frames=frames), perception, limits)
        for looks in ("scan", "search")
    }
    kept = []
    for script in scripts:
        if not reads(script.episode):
            continue
        rewards = [score(agent.run(script.episode), script.episode, dense) for agent in agents.values()]
        if abs(rewards[0] - rewards[1]) > 1e-6:
            kept.append(script)
    return kept


def per_kind(scripts: Sequence[Script]) -> str:
    """`MOC 41, MSR 12`: how many scripts of each kind."""
    return ", ".join(f"{kind} {n}" for kind, n in sorted(Counter(s.task for s in scripts).items()))
