"""`agentcvr eval synth`: the CrossVid runner, scoring and report over rendered synthetic episodes (answers known),
with the embedded CPU stack — the end-to-end benchmark that runs on a laptop.

    agentcvr eval synth --per-task 5 --policy expert --out runs/synth.jsonl     # generate, render, run, report
    agentcvr eval synth --per-task 5 --policy gguf --out runs/synth-gguf.jsonl  # the embedded master (slow on CPU)

Scripts are generated (seeded) and rendered to MP4s once (`scripts_gen.render` skips what is there); each episode
runs through the agent loop with real perception (the CPU frame describer, faster-whisper tiny.en). CCQA is judged
by the registry's keyword judge, whose verdict is written in the official judge format so the official parser and
pooling score it like a CrossVid run.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from agentcvr.cli_options import ComponentOption, Concurrency, Resume, Retries, Timeout
from agentcvr.episode import Episode
from agentcvr.interfaces import MAX_TURNS_HELP
from agentcvr.tasks import TASK_ORDER
from agentcvr.tasks.registry import keyword_judge
from agentcvr.terminal import fail
from eval.crossvid.loader import CrossVidItem
from eval.crossvid.records import JudgeRecord

console = Console(width=None if sys.stdout.isatty() else 160)  # the paper's 15 columns need the width in logs


def synth_items(rendered: Path) -> tuple[list[CrossVidItem], dict]:
    """(items over the rendered episodes, scripts by id)."""
    from scripts_gen.render import load_rendered

    items, scripts = [], {}
    for script, episode in load_rendered(rendered):
        scripts[script.id] = script
        points = episode.reference.get("point_keywords") or episode.reference.get("scoring_points") or []
        raw = {"id": script.id, "answer": episode.answer, "question": episode.question}
        if episode.task == "CCQA":
            raw["scoring_points"] = [" ".join(p) if isinstance(p, list) else str(p) for p in points]
        media = [Path(v.path) for v in episode.videos if v.path]
        items.append(CrossVidItem(episode.task, raw, media=media, episode=episode))
    return items, scripts


class KeywordJudge:
    """The registry's offline keyword judge, answering in the official judge's `<score>{...}</score>` format."""

    def __init__(self, episodes: dict[str, Episode]):
        self.episodes = episodes

    async def score(self, raw: dict, output: str | None) -> JudgeRecord:
        covered, correct = keyword_judge(output or "", self.episodes[raw["id"]])
        reply = "<score>" + json.dumps({"coverage": covered, "correctness": correct}) + "</score>"
        return JudgeRecord(model="keyword", reply=reply)

    async def aclose(self) -> None:
        return None


def synth_command(
    out: Annotated[Path, typer.Option(help="Predictions JSONL (the report goes beside it).")] = Path(
        "runs/synth.jsonl"
    ),
    per_task: Annotated[int, typer.Option(help="Episodes per task kind.", min=1)] = 5,
    seed: Annotated[int, typer.Option(help="Generator seed.")] = 0,
    rendered: Annotated[Path, typer.Option(help="Folder of rendered episodes (made here if missing).")] = Path(
        "runs/synth-rendered"
    ),
    policy: Annotated[str, typer.Option(help="Master policy: expert (reads the script), gguf, random, ...")] = "expert",
    perception: Annotated[
        str, typer.Option(help="Perception: real (the rendered MP4s) or sim (the script simulator).")
    ] = "real",
    max_turns: Annotated[int, typer.Option(help=MAX_TURNS_HELP, min=1)] = 12,
    option: ComponentOption = None,
    resume: Resume = False,
    concurrency: Concurrency = 1,
    retries: Retries = 1,
    timeout: Timeout = 600.0,
) -> None:
    """Generate, render and run synthetic episodes with the embedded CPU stack (or the simulator: --perception sim);
    score and report like CrossVid."""
    from agentcvr.components import perception_component, policy_component, recorded
    from agentcvr.interfaces import Limits
    from agentcvr.overrides import component_options
    from agentcvr.script import write_jsonl
    from agentcvr.spec import RunSpec, SpecMismatch
    from eval.agent_mode import agent_predictor
    from eval.crossvid.judge import judged
    from eval.crossvid.report import write_report
    from eval.report_cli import check_scorable
    from eval.runner import RunConfig, pending, run_items
    from eval.summary import summarize
    from scripts_gen.generate import generate
    from scripts_gen.render import render_scripts

    scripts = [s for task in TASK_ORDER for s in generate(task, per_task, seed)]
    scripts_file = rendered / "generated.jsonl"
    rendered.mkdir(parents=True, exist_ok=True)
    write_jsonl(scripts, scripts_file)
    report = render_scripts(scripts_file, rendered, progress=True)
    console.print(
        f"rendered {report.scripts} episode(s), {report.skipped} already there, in {report.seconds:.0f} s", markup=False
    )
    wanted = {s.id for s in scripts}
    items, by_id = synth_items(rendered)
    items = [item for item in items if item.raw["id"] in wanted]
    try:
        policy_options, perception_options = component_options({}, {}, option or [])
        policy_part = policy_component(policy, **policy_options)
        perception_part = perception_component(perception, **perception_options)
        limits = Limits(max_turns=max_turns)
        spec = RunSpec(policy=recorded(policy_part), perception=recorded(perception_part), limits=limits)
        pending(items, out, resume, spec)
        predictor, close = agent_predictor(policy_part, perception_part, limits, by_id, concurrency)
    except (FileExistsError, SpecMismatch, ValueError, FileNotFoundError) as error:
        fail(console, str(error))
    judge = KeywordJudge({item.raw["id"]: item.episode for item in items if item.episode is not None})
    config = RunConfig(concurrency=concurrency, retries=retries, timeout=timeout, resume=resume)
    grade = judged(judge)
    try:
        records = asyncio.run(run_items(items, predictor, out, config, spec=spec, grade=grade, console=console))
    finally:
        close()
    name = f"synth-{policy}-{perception}"
    write_report({name: records}, out.with_suffix(".md"), console=console)
    check_scorable(console, {name: summarize(records)})
