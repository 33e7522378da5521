"""What an untrained matcher adds over the reader's head on one task kind (MSR, MOC): the same episodes after the
scan and after the search's turn, answered once by the head alone and once by the matcher where it answers, paired
per episode with a bootstrap over episodes. docs/reader.md's MSR and MOC tables.

    agentcvr gen-scripts --task MOC -n 150 --seed 47 --out runs/seed47-moc.jsonl
    OMP_NUM_THREADS=1 .venv/bin/python benchmarks/matched_reading.py --scripts runs/seed47-moc.jsonl --task MOC
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

os.environ.setdefault("OMP_NUM_THREADS", "1")

from paired_masters import bootstrap  # benchmarks/, this script's own folder, leads sys.path
from rich.console import Console
from rich.table import Table

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.read_answers import ReaderAnswers
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.search import scan_then_search
from agentcvr.reader import MATCHED_ELSE_READ, Reader, reader_folder
from agentcvr.script import Script
from simulator.script_sim import ScriptSimulator


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scripts", type=Path, required=True, help="gen-scripts JSONL")
    parser.add_argument("--task", required=True, choices=sorted(MATCHED_ELSE_READ), help="the kind to compare")
    parser.add_argument("--reader", default="scan-v2", help="a shipped reader's name or a reader folder")
    parser.add_argument("--frames", type=int, default=128, help="frames a scan look asks for (the default master's)")
    parser.add_argument(
        "--observation-chars",
        type=int,
        default=Limits().max_observation_chars,
        help="each observation cut to this many characters (train-sim's agent.max_observation_chars is 600)",
    )
    args = parser.parse_args()
    scripts = [s for s in map(Script.model_validate_json, args.scripts.read_text().splitlines()) if s.task == args.task]
    if not scripts:
        parser.error(f"{args.scripts} holds no {args.task} script")
    matched = Reader.load(reader_folder(args.reader))
    head = Reader.load(reader_folder(args.reader), encoder=matched.encoder)
    del head.matched_else_read[args.task]
    readers = {"head": head, "matcher": matched}
    table = {s.id: s for s in scripts}
    looks = {
        "scan": ScanTeacher(table, frames=args.frames),
        "search": scan_then_search(table, "tools", 1, args.frames),
    }
    right: dict[tuple[str, str], list[float]] = {}  # (looks, answered by) -> each episode right or not
    for look, policy in looks.items():
        for how, reader in readers.items():
            limits = Limits(max_turns=6, max_observation_chars=args.observation_chars)
            agent = Agent(ReaderAnswers(policy, reader), ScriptSimulator(table, sampling="frames"), limits)
            right[look, how] = [float(agent.run(s.episode).answer == s.answer) for s in scripts]
    baseline = right["scan", "head"]
    out = Table(
        title=f"{args.task}: {len(scripts)} episodes of {args.scripts}, reader {args.reader}, "
        f"observations cut at {args.observation_chars} characters"
    )
    for column in ("looks", "answered by", "success %", "paired against the scan's head (95 %)", "won", "lost"):
        out.add_column(column)
    for (look, how), scores in right.items():
        differences = [b - a for a, b in zip(baseline, scores, strict=True)]
        low, high = bootstrap(differences)
        out.add_row(
            look,
            how,
            f"{100 * sum(scores) / len(scores):.1f}",
            f"{100 * sum(differences) / len(differences):+.1f} ({100 * low:+.1f} .. {100 * high:+.1f})",
            str(sum(d > 0 for d in differences)),
            str(sum(d < 0 for d in differences)),
        )
    Console().print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
