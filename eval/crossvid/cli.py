"""`agentcvr eval crossvid`: run CrossVid end to end (`agentcvr report`, in eval/report_cli.py, re-scores saved runs).

    agentcvr eval crossvid --root /data/CrossVid --mode single-pass --vlm-url http://gpu:8000/v1 \
        --vlm-model Qwen/Qwen3-VL-8B-Instruct --concurrency 64 --judge-url http://gpu:8001/v1 --out runs/qwen8b.jsonl
    agentcvr eval crossvid --root /data/CrossVid --mode agent --policy gguf --tasks NC,PI --limit 5 --out runs/a.jsonl
    agentcvr report runs/qwen8b.jsonl runs/a.jsonl --out runs/report.md
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from agentcvr.cli_options import ComponentOption, Concurrency, Resume, Retries, Timeout
from agentcvr.components import DEFAULT_POLICY, perception_component, policy_component, recorded
from agentcvr.interfaces import MAX_TURNS_HELP, Limits
from agentcvr.overrides import component_options
from agentcvr.spec import Component, RunSpec, SpecMismatch
from agentcvr.tasks import TASK_ORDER
from agentcvr.terminal import fail
from eval.report_cli import check_scorable

console = Console(width=None if sys.stdout.isatty() else 160)  # the paper's 15 columns need the width in logs


def _fail(message: str) -> NoReturn:
    fail(console, message)


def _tasks(spec: str) -> list[str]:
    tasks = TASK_ORDER if spec == "all" else [t.strip().upper() for t in spec.split(",") if t.strip()]
    unknown = [t for t in tasks if t not in TASK_ORDER]
    if unknown:
        _fail(f"unknown task(s) {', '.join(unknown)}: choose from {', '.join(TASK_ORDER)} or 'all'")
    return tasks


def crossvid_command(
    root: Annotated[Path, typer.Option(help="CrossVid folder holding QA/, videos/ and uav/.")],
    out: Annotated[Path, typer.Option(help="Predictions JSONL, appended item by item.")] = Path("runs/crossvid.jsonl"),
    mode: Annotated[
        str, typer.Option(help="agent (master agent + real perception) or single-pass (the official evaluation).")
    ] = "agent",
    tasks: Annotated[str, typer.Option(help="Comma-separated tasks (BU,NC,...) or 'all'.")] = "all",
    limit: Annotated[int | None, typer.Option(help="At most this many items per task.", min=1)] = None,
    qa_dir: Annotated[Path | None, typer.Option(help="Annotation folder, if not ROOT/QA.")] = None,
    resume: Resume = False,
    on_missing: Annotated[
        str, typer.Option(help="Items whose media are missing: 'skip' them or 'fail' before running.")
    ] = "fail",
    concurrency: Concurrency = 8,
    retries: Retries = 3,
    timeout: Timeout = 900.0,
    policy: Annotated[
        str, typer.Option(help="Agent mode: master policy (gguf, trained, openai:MODEL, hf:DIR).")
    ] = DEFAULT_POLICY,
    base_url: Annotated[str | None, typer.Option(help="Agent mode: OpenAI-compatible URL for openai:MODEL.")] = None,
    max_turns: Annotated[int, typer.Option(help=f"Agent mode: {MAX_TURNS_HELP}", min=1)] = 20,
    vlm_url: Annotated[
        str | None, typer.Option(help="VLM server: the single-pass model, or the agent's visual agent.")
    ] = None,
    vlm_model: Annotated[str | None, typer.Option(help="Model name at --vlm-url.")] = None,
    option: ComponentOption = None,
    frames: Annotated[int, typer.Option(help="Single-pass: frames per item (the official 128).", min=2)] = 128,
    judge_url: Annotated[
        str | None, typer.Option(help="CCQA judge: an OpenAI-compatible URL (default: embedded GGUF).")
    ] = None,
    judge_model: Annotated[str | None, typer.Option(help="Judge model (default: the first the server lists).")] = None,
    frame_cache: Annotated[Path, typer.Option(help="Decoded frames are cached here across runs and models.")] = Path(
        "~/.cache/agentcvr/frames"
    ),
    report: Annotated[
        Path | None, typer.Option(help="Markdown report (default: OUT with .md; a .png beside it).")
    ] = None,
) -> None:
    """Run CrossVid: load, check media, predict with bounded concurrency, score official + strict, write a report."""
    from eval.crossvid.judge import judged
    from eval.crossvid.loader import load_crossvid, missing_media
    from eval.crossvid.report import write_report
    from eval.runner import RunConfig, pending, run_items
    from eval.summary import summarize

    if on_missing not in ("skip", "fail"):
        _fail(f"--on-missing must be 'skip' or 'fail', got {on_missing!r}")
    if mode not in ("agent", "single-pass"):
        _fail(f"--mode must be 'agent' or 'single-pass', got {mode!r}")
    chosen = _tasks(tasks)
    try:
        items, problems = load_crossvid(root, chosen, qa_dir)
    except ValueError as error:
        _fail(str(error))
    for problem in problems:
        console.print(Text.assemble(("skipped:", "yellow"), f" {problem}"))
    if limit is not None:
        items = [item for task in chosen for item in [i for i in items if i.task == task][:limit]]
    if not items:
        _fail(f"no items to run under {qa_dir or root / 'QA'}")
    bad = [item for item in items if item.error]
    if bad:
        errors = "; ".join(i.error for i in bad[:5])
        console.print(Text.assemble((f"{len(bad)} malformed item(s), recorded as failures:", "yellow"), f" {errors}"))
    missing = missing_media(items)
    if missing:
        examples = "; ".join(f"{key}: {paths[0]}" for key, paths in list(missing.items())[:5])
        console.print(
            Text.assemble((f"{len(missing)} of {len(items)} item(s) miss media", "yellow"), f" (e.g. {examples})")
        )
        if on_missing == "fail":
            _fail("media missing: fetch them, or pass --on-missing skip to run the others")
        items = [item for item in items if item.key not in missing]
        if not items:
            _fail(f"every item's media are missing: nothing to run (fetch the videos under {root / 'videos'})")
    spec, policy_part, perception_part = _run_spec(
        mode, policy, base_url, max_turns, vlm_url, vlm_model, frames, option or []
    )
    try:
        todo, _ = pending(items, out, resume, spec)
    except (FileExistsError, SpecMismatch) as error:
        _fail(str(error))
    console.print(f"{len(items)} item(s), {len(todo)} to run, mode {mode}, concurrency {concurrency}", markup=False)
    predictor, close = _predictor(spec, policy_part, perception_part, frame_cache.expanduser(), concurrency)
    needs_judge = any(i.task == "CCQA" for i in todo)
    if needs_judge and not judge_url and mode == "agent" and policy.startswith("hf"):
        _fail("CCQA with an hf: policy needs --judge-url (the embedded GGUF judge cannot share a process with torch)")
    judge = _judge(judge_url, judge_model) if needs_judge else None
    config = RunConfig(concurrency=concurrency, retries=retries, timeout=timeout, resume=resume)

    async def main():
        try:
            grade = judged(judge) if judge is not None else None
            return await run_items(items, predictor, out, config, spec=spec, grade=grade, console=console)
        finally:
            if judge is not None:
                await judge.aclose()
            if hasattr(predictor, "aclose"):
                await predictor.aclose()

    try:
        records = asyncio.run(main())
    finally:
        close()
    write_report({out.stem: records}, report or out.with_suffix(".md"), console=console)
    check_scorable(console, {out.stem: summarize(records)})


def _run_spec(
    mode, policy, base_url, max_turns, vlm_url, vlm_model, frames, overrides: list[str]
) -> tuple[RunSpec, Component, Component | None]:
    """The run's spec and the components it names. Single-pass: the VLM is the predictor (the spec's policy)."""
    if mode == "single-pass":
        if not vlm_url or not vlm_model:
            _fail("--mode single-pass needs --vlm-url and --vlm-model")
        if overrides:
            _fail("-o sets the agent's policy and perception options: --mode agent only")
        model = Component(name="single-pass", options={"base_url": vlm_url, "model": vlm_model, "frames": frames})
        return RunSpec(policy=recorded(model)), model, None
    vlm = {"visual": "vlm", "vlm": {"base_url": vlm_url, "model": vlm_model or "default"}} if vlm_url else {}
    try:
        policy_options, perception_options = component_options({"base_url": base_url}, vlm, overrides)
        policy_part = policy_component(policy, **policy_options)
        perception_part = perception_component("real", **perception_options)
    except ValueError as error:
        _fail(str(error))
    spec = RunSpec(
        policy=recorded(policy_part), perception=recorded(perception_part), limits=Limits(max_turns=max_turns)
    )
    return spec, policy_part, perception_part


def _predictor(
    spec: RunSpec, policy_part: Component, perception_part: Component | None, frame_cache: Path, concurrency: int
):
    """The predictor for a spec and a function that releases it."""
    if policy_part.name == "single-pass":
        from eval.crossvid.single_pass import SinglePassPredictor

        options = policy_part.options
        predictor = SinglePassPredictor(
            options["base_url"], options["model"], frames=options["frames"], cache_dir=frame_cache
        )
        return predictor, lambda: None  # its HTTP client closes inside the event loop (aclose)
    from eval.agent_mode import agent_predictor

    assert perception_part is not None and spec.limits is not None  # agent mode has both
    cached = perception_part.model_copy(
        update={"options": {**perception_part.options, "frame_cache_dir": str(frame_cache)}}
    )
    try:
        return agent_predictor(policy_part, cached, spec.limits, concurrency=concurrency)
    except (ValueError, FileNotFoundError) as error:
        _fail(str(error))


def _judge(judge_url, judge_model):
    from eval.crossvid.judge import ChatJudge, Judge

    if judge_url:
        return Judge(judge_url, judge_model)
    from agentcvr.policies.gguf import GGUFChat

    console.print("CCQA judge: the embedded GGUF model (pass --judge-url for a stronger one)")
    chat = GGUFChat(max_tokens=256)
    return ChatJudge(chat, chat.name)
