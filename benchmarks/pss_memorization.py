"""Is the simulator's PSS read or memorized? A step orderer over the reader's frozen sentence vectors, trained on the
scan's looks at PSS scripts, tested on held-out scripts of the same dishes and on a dish it never saw.

    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/pss_memorization.py --train 1500 --heldout 200

Each clip (a video of the episode) is its observed lines pooled by a learned attention, scored by a small MLP; the
clips sorted by score are the order; trained with a Plackett-Luce loss over the true order. Printed: exact orders
and position accuracy (PSS's dense reward) on held-out scripts of the same dishes, then, for each dish, trained on
the other dishes' scripts and tested on that one's. An orderer that read what makes a step follow another (the
previous step's product) would hold up on an unseen dish; one that memorized each recipe's step positions would not.
"""

from __future__ import annotations

import argparse
import os
import random

os.environ.setdefault("OMP_NUM_THREADS", "1")

import torch
from rich.console import Console
from rich.table import Table
from torch import nn

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.models import READER_BASE, ensure_model
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.teaching import looks
from agentcvr.reading import evidence_lines, evidence_text, seen_from
from agentcvr.script import Script
from agentcvr.sentences import SentenceEncoder
from scripts_gen.generate import generate_one
from simulator.script_sim import ScriptSimulator

Clips = tuple[int, torch.Tensor, torch.Tensor, list[int]]  # clip count, line vectors, each line's clip, true order


def clips_of(scripts: list[Script], encoder: SentenceEncoder) -> list[Clips]:
    """The scan's looks at each script as line vectors, each with its clip, and the true order of the clips."""
    table = {s.id: s for s in scripts}
    agent = Agent(ScanTeacher(table), ScriptSimulator(table), Limits(max_turns=4))
    found = []
    for script in scripts:
        _, messages = agent.converse(script.episode)
        seen = [seen_from(look.action, look.observation) for look in looks(messages, script.episode)]
        lines = evidence_lines(evidence_text(seen))
        videos = torch.tensor([line.video for line in lines])
        order = [int(n) for n in str(script.answer).split("->")]
        found.append((len(script.videos), encoder.vectors([line.text for line in lines]), videos, order))
    return found


class Orderer(nn.Module):
    def __init__(self, dim: int = 384, width: int = 128):
        super().__init__()
        self.attention = nn.Linear(dim, 1)
        self.score = nn.Sequential(nn.Linear(dim, width), nn.GELU(), nn.Linear(width, 1))

    def forward(self, count: int, lines: torch.Tensor, videos: torch.Tensor) -> torch.Tensor:
        weights = self.attention(lines).squeeze(-1)
        scores = []
        for clip in range(1, count + 1):
            mine = videos == clip
            if not bool(mine.any()):
                scores.append(lines.new_tensor(0.0))
                continue
            pooled = (torch.softmax(weights[mine], 0).unsqueeze(-1) * lines[mine]).sum(0)
            scores.append(self.score(pooled).squeeze())
        return torch.stack(scores)


def plackett_luce(scores: torch.Tensor, order: list[int]) -> torch.Tensor:
    ranked = scores[torch.tensor([n - 1 for n in order])]
    return sum(torch.logsumexp(ranked[i:], 0) - ranked[i] for i in range(len(order)))


def fit(train: list[Clips], passes: int, seed: int) -> Orderer:
    torch.manual_seed(seed)
    model = Orderer(train[0][1].shape[-1])
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    rng = random.Random(seed)
    for _ in range(passes):
        for count, lines, videos, order in rng.sample(train, len(train)):
            loss = plackett_luce(model(count, lines, videos), order)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
    return model


def scored(model: Orderer, items: list[Clips]) -> tuple[float, float]:
    """Exact orders and mean position accuracy."""
    exact = positions = 0.0
    with torch.no_grad():
        for count, lines, videos, order in items:
            scores = model(count, lines, videos)
            guess = sorted(range(1, count + 1), key=lambda clip: -float(scores[clip - 1]))
            exact += guess == order
            positions += sum(a == b for a, b in zip(guess, order, strict=True)) / count
    return exact / len(items), positions / len(items)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--train", type=int, default=1500, help="training PSS scripts (generator seed 1)")
    parser.add_argument("--heldout", type=int, default=200, help="held-out PSS scripts (generator seed 10000)")
    parser.add_argument("--passes", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    encoder = SentenceEncoder(ensure_model(READER_BASE, progress=False))
    train_scripts = [generate_one("PSS", i, 1) for i in range(args.train)]
    heldout_scripts = [generate_one("PSS", i, 10000) for i in range(args.heldout)]
    train, heldout = clips_of(train_scripts, encoder), clips_of(heldout_scripts, encoder)
    table = Table(title="PSS step orderer: exact orders % / position accuracy %")
    for column in ("trained on", "tested on", "test scripts", "exact %", "positions %"):
        table.add_column(column)
    exact, positions = scored(fit(train, args.passes, 0), heldout)
    table.add_row("all dishes", "held-out scripts, same dishes", str(len(heldout)), f"{100 * exact:.1f}",
                  f"{100 * positions:.1f}")  # fmt: skip
    everything = list(zip(train_scripts + heldout_scripts, train + heldout, strict=True))
    for dish in sorted({str(s.reference["dish"]) for s in train_scripts}):
        seen = [clips for script, clips in everything if script.reference["dish"] != dish]
        unseen = [clips for script, clips in everything if script.reference["dish"] == dish][: args.heldout]
        exact, positions = scored(fit(seen, args.passes, 0), unseen)
        table.add_row("the other dishes", dish, str(len(unseen)), f"{100 * exact:.1f}", f"{100 * positions:.1f}")
        Console().print(f"{dish}: exact {100 * exact:.1f} %, positions {100 * positions:.1f} %")
    Console(width=160).print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
