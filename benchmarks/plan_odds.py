r"""How often does a warm start sample the search's turn rather than answering after the scan?

GRPO can only prefer the search's looks (docs/reader.md) over answering after the scan if its rollouts make both. A
warm start trained on a teacher that searches on a share of episodes (`train-sim -o sft.teacher=search -o
sft.teacher_search_share=S`) should put about that share of its probability on the search's turn; sampling groups
(`benchmarks/grpo_signal.py`) measures it at minutes a group. This reads it exactly and in seconds: on each episode the
scan teacher's conversation and the search teacher's part at the policy turn after the scan; the policy's next-token
distribution at the first token where they part gives the probability of starting each plan (at each temperature),
and of a group of G rollouts holding both. Greedy decoding takes whichever is larger. The same token decides every
later turn too, so it also reads whether the policy stops after the search: at the search teacher's answer turn, the
probability of answering against looking again (session 34: a master trained to search after the scan searched again
and again). `--max-turns` is the limit the system prompt states: give the one the run trained under.

    for t in NC PEA MSR MOC CCQA; do agentcvr gen-scripts --task $t -n 30 --seed 48 --out /tmp/s48-$t.jsonl; done
    cat /tmp/s48-*.jsonl > runs/seed48-search.jsonl
    OMP_NUM_THREADS=2 .venv/bin/python benchmarks/plan_odds.py --warm-start runs/smol-v10/warmstart \
        --scripts runs/seed48-search.jsonl --temperature 1.0 --temperature 1.3

Only the kinds where the search makes a call (NC, PEA, MSR, MOC, CCQA) part; on the others (BU, CC, PI, FSA, PSS) the
table reads the stop after the scan alone, the decision GRPO's search spread to (session 48) and
`grpo.stop_anchor_counts` holds. The policy is assumed to have made the scan's turns as the teacher did (a warm start
imitates them nearly always).
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from rich.console import Console
from rich.table import Table

from agentcvr.agent import Agent
from agentcvr.interfaces import Limits
from agentcvr.policies.hf_policy import checkpoint_protocol, checkpoint_tools
from agentcvr.policies.scan_teacher import ScanTeacher
from agentcvr.policies.search import scan_then_search
from agentcvr.script import Script
from simulator.script_sim import ScriptSimulator
from train.forced_plan import parting_ids, stop_point


def add_branch_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of the benchmarks that read a warm start where the two plans part (this one, forced_branch.py)."""
    parser.add_argument("--warm-start", type=Path, required=True, help="a train-sim warm-start (or final) folder")
    parser.add_argument(
        "--scripts", type=Path, required=True, help="gen-scripts JSONL (a seed the warm start never saw)"
    )
    parser.add_argument("--task", action="append", help="kinds (repeatable); default every kind in the scripts")
    parser.add_argument("--frames", type=int, default=128, help="frames a scan look asks for (the teacher's)")
    parser.add_argument("--observation-chars", type=int, default=Limits().max_observation_chars)
    parser.add_argument(
        "--max-turns", type=int, default=6, help="the turn limit the system prompt states (train with the same)"
    )


def parse_branch_arguments(parser: argparse.ArgumentParser) -> argparse.Namespace:
    """The parsed options; a warm start without merged weights is refused."""
    args = parser.parse_args()
    if not (args.warm_start / "config.json").exists():
        parser.error(f"--warm-start {args.warm_start} holds no merged model (config.json)")
    return args


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_branch_arguments(parser)
    parser.add_argument("--temperature", type=float, action="append", help="sampling temperatures (repeatable)")
    parser.add_argument("--group", type=int, default=8, help="rollouts a GRPO group samples")
    args = parse_branch_arguments(parser)
    if any(t <= 0 for t in args.temperature or []):
        parser.error("--temperature must be above 0 (greedy is the table's 'greedy searches' column)")

    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    scripts = [Script.model_validate_json(line) for line in args.scripts.read_text().splitlines() if line.strip()]
    scripts = [s for s in scripts if args.task is None or s.task in args.task]
    if not scripts:
        parser.error(f"{args.scripts} holds no script of {args.task}")
    table = {s.id: s for s in scripts}
    limits = Limits(max_turns=args.max_turns, max_observation_chars=args.observation_chars)
    perception = ScriptSimulator(table, sampling="frames")
    protocol = checkpoint_protocol(args.warm_start)  # the action format the warm start writes
    tools = checkpoint_tools(args.warm_start, protocol)
    scan = Agent(ScanTeacher(table, protocol=protocol, frames=args.frames), perception, limits)
    search = Agent(scan_then_search(table, protocol, 1, args.frames), perception, limits)
    tokenizer = AutoTokenizer.from_pretrained(args.warm_start)
    model = AutoModelForCausalLM.from_pretrained(args.warm_start, dtype=torch.float32).eval()
    temperatures = args.temperature or [1.0]

    def probabilities(ids: list[int], tokens: tuple[int, int]) -> dict[float, tuple[float, float]]:
        """The next token's probability of each of `tokens` after `ids`, at each temperature."""
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        return {t: (float(p[tokens[0]]), float(p[tokens[1]])) for t in temperatures for p in [(logits / t).softmax(-1)]}

    # kind -> per episode {temperature: (P(search), P(answer))} after the scan, {temperature: (P(answer), P(look))}
    # after the search's looks
    odds: dict[str, list[dict[float, tuple[float, float]]]] = defaultdict(list)
    stops: dict[str, list[dict[float, tuple[float, float]]]] = defaultdict(list)
    for script in scripts:
        searched = search.converse(script.episode)[1]
        parted = parting_ids(tokenizer, tools, scan.converse(script.episode)[1], searched)
        if parted is not None:  # None: the search made no call here, and its stop is the scan's
            shared, scan_token, search_token = parted
            odds[script.task].append(probabilities(shared, (search_token, scan_token)))
        if (stop := stop_point(tokenizer, tools, searched)) is not None:
            stops[script.task].append(probabilities(stop[0], (stop[1], stop[2])))

    out = Table(title=f"Where the plans part: {args.warm_start}, {args.scripts} (groups of {args.group})")
    columns = ("kind", "episodes", "T", "P(search) %", "P(answer) %", "greedy searches", "groups with both %")
    for column in (*columns, "P(stop after its looks) %", "greedy stops"):
        out.add_column(column, justify="left" if column == "kind" else "right")
    for kind in sorted(set(odds) | set(stops)):
        for t in temperatures:
            pairs = [episode[t] for episode in odds[kind]]
            both = [1 - (1 - s) ** args.group - (1 - a) ** args.group + (1 - s - a) ** args.group for s, a in pairs]
            after = [episode[t] for episode in stops[kind]]
            out.add_row(
                kind,
                str(max(len(pairs), len(after))),
                f"{t:g}",
                *(
                    (
                        f"{100 * sum(s for s, _ in pairs) / len(pairs):.1f}",
                        f"{100 * sum(a for _, a in pairs) / len(pairs):.1f}",
                        f"{sum(s > a for s, a in pairs)}/{len(pairs)}",
                        f"{100 * sum(both) / len(both):.0f}",
                    )
                    if pairs
                    else ("-",) * 4  # the plans never part: the stop is the scan's
                ),
                f"{100 * sum(a for a, _ in after) / len(after):.1f}" if after else "-",
                f"{sum(a > look for a, look in after)}/{len(after)}" if after else "-",
            )
    Console().print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
