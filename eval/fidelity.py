"""Sim-to-real fidelity: the same rendered episodes, the same policy, simulated and real perception (paper Table 3).

    agentcvr eval fidelity runs/rendered --policy expert --limit 10 --out runs/fidelity [--resume]
    python -m eval.fidelity runs/rendered --policy expert      # the same without the CLI

For every episode of a rendered folder (`scripts_gen.render`), the policy runs twice: against the script simulator
and against `RealPerception` on the MP4s. Reported per task kind and overall:
- decision overlap: the share of episodes where both runs gave the same (normalized) answer — every kind but FSA;
  the paper reports 83.9 % on BU;
- FSA IoU: mean temporal IoU between the interval predicted with the simulator and the one predicted with real
  perception (an unparseable or missing answer counts 0); the paper reports 87.4 %;
- per-call latency of observe/listen, simulated and real, and their ratio (paper: 1.6 s vs 7.3-8.6 s, with an LLM
  simulator on GPUs); accuracy both ways; real perception errors recorded in the traces;
- evidence facts delivered: how many of the scripts' evidence facts appear in the real run's observations, word
  for word and after dropping case and punctuation (the expert policy answers when every fact is there after
  dropping case and punctuation).
Episodes go through the one items path (`eval.runner.run_items`, the flags of `agentcvr run`: --concurrency,
--retries, --timeout, --resume): `<out>/pairs.jsonl` holds one `eval.record.Record` per episode, the real run's
trace as its `result` (scored by the registry, so `agentcvr report` reads it) and the simulated one as its
`reference`, with the run spec (`agentcvr.spec`: the policy, real perception as `perception`, the simulator as
`reference`, the limits, with their options); the summary and the spec go to `<out>/fidelity.json`. An `<out>` that
holds records is refused without --resume; with it, finished episodes are read back (their pairs computed again from
the two traces) and failed ones run again, only under the same spec (another one is refused, naming what differs).
A folder written before pairs were records is refused as holding lines that are not records. An episode whose tries
all failed has no pair: the table's title counts it, `fidelity.json` names why.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

from agentcvr.cli_options import ComponentOption, Concurrency, Resume, Retries, Timeout
from agentcvr.episode import Episode
from agentcvr.interfaces import MAX_TURNS_HELP, Limits
from agentcvr.overrides import component_options
from agentcvr.script import Script
from agentcvr.spec import RunSpec
from agentcvr.tasks import TASK_ORDER, get_task, scoring
from agentcvr.text import facts_found
from agentcvr.trace import EpisodeResult
from eval.agent_mode import AgentPredictor, EpisodeItem, agent_predictor, grade_episode
from eval.record import Record
from eval.runner import RunConfig, pending, run_items


@dataclass
class Pair:
    """One episode run both ways."""

    episode_id: str
    task: str
    sim_answer: str | None
    real_answer: str | None
    agree: bool | None  # None for FSA
    iou: float | None  # FSA only
    sim_score: float
    real_score: float
    sim_call_seconds: list[float] = field(default_factory=list)
    real_call_seconds: list[float] = field(default_factory=list)
    real_errors: list[str] = field(default_factory=list)
    sim_failure: str | None = None
    real_failure: str | None = None
    facts: int = 0  # evidence facts of the script
    facts_verbatim: int = 0  # of them, found word for word in the real run's observations
    facts_normalized: int = 0  # found after lower-casing and dropping punctuation


@dataclass
class TaskRow:
    task: str
    episodes: int
    overlap: float | None
    iou: float | None
    sim_accuracy: float
    real_accuracy: float
    sim_call_ms: float
    real_call_ms: float
    calls: int
    real_errors: int
    facts: int = 0
    facts_verbatim: int = 0
    facts_normalized: int = 0

    @property
    def latency_ratio(self) -> float | None:
        return self.real_call_ms / self.sim_call_ms if self.sim_call_ms > 0 else None


@dataclass
class FidelityReport:
    pairs: list[Pair]
    policy: str
    sim: str
    seconds: float = 0.0
    spec: RunSpec | None = None
    failed: dict[str, str] = field(default_factory=dict)  # episode id -> why no reply came (after its tries)

    def rows(self) -> list[TaskRow]:
        """One row per task kind present, in CrossVid's order, then 'all'."""
        kinds = [k for k in TASK_ORDER if any(p.task == k for p in self.pairs)]
        return [_row(k, [p for p in self.pairs if p.task == k]) for k in kinds] + [_row("all", self.pairs)]

    def table(self) -> Table:
        table = Table(
            title=f"Sim-to-real fidelity: policy {self.policy}, {self.sim} vs real, "
            f"{len(self.pairs)} episodes ({self.seconds:.0f} s)"
            + (f", {len(self.failed)} failed" if self.failed else "")
        )
        columns = [
            "task",
            "n",
            "decision overlap",
            "FSA IoU",
            "acc sim",
            "acc real",
            "ms/call sim",
            "ms/call real",
            "real/sim",
            "calls",
            "real errors",
            "facts real (exact / normalized)",
        ]
        for column in columns:
            table.add_column(column, justify="left" if column == "task" else "right")
        for row in self.rows():
            ratio = row.latency_ratio
            table.add_row(
                row.task,
                str(row.episodes),
                _pct(row.overlap),
                _pct(row.iou),
                _pct(row.sim_accuracy),
                _pct(row.real_accuracy),
                f"{row.sim_call_ms:.3f}",
                f"{row.real_call_ms:.0f}",
                f"{ratio:,.0f}x" if ratio is not None else "-",
                str(row.calls),
                str(row.real_errors),
                f"{row.facts_verbatim}/{row.facts} / {row.facts_normalized}/{row.facts}" if row.facts else "-",
            )
        return table

    def summary(self) -> dict[str, Any]:
        return {
            "spec": self.spec.model_dump(mode="json") if self.spec else None,
            "policy": self.policy,
            "sim": self.sim,
            "episodes": len(self.pairs),
            "failed": self.failed,
            "seconds": self.seconds,
            "rows": [{**asdict(row), "latency_ratio": row.latency_ratio} for row in self.rows()],
        }


def compare(episode: Episode, sim: EpisodeResult, real: EpisodeResult, script: Script | None = None) -> Pair:
    """Agreement (or FSA IoU) and scores of one episode run both ways; with the script, how many of its evidence
    facts the real observations delivered (a policy that never looks at the evidence delivers none)."""
    task = get_task(episode.task)
    agree = iou = None
    if episode.task == "FSA":
        a = scoring.parse_interval(sim.answer or "")
        b = scoring.parse_interval(real.answer or "")
        iou = scoring.temporal_iou(a, b) if a and b else 0.0
    else:
        agree = sim.answer is not None and _normal(task, sim.answer) == _normal(task, real.answer)
    return Pair(
        episode_id=episode.id,
        task=episode.task,
        sim_answer=sim.answer,
        real_answer=real.answer,
        agree=agree,
        iou=iou,
        sim_score=task.strict(sim.answer or "", episode),
        real_score=task.strict(real.answer or "", episode),
        sim_call_seconds=_call_seconds(sim),
        real_call_seconds=_call_seconds(real),
        real_errors=[s.error or "" for s in real.steps if s.kind == "tool_error"],
        sim_failure=sim.failure,
        real_failure=real.failure,
        **_facts(script, real),
    )


def _facts(script: Script | None, real: EpisodeResult) -> dict[str, int]:
    if script is None:
        return {}
    seen = "\n".join(s.observation or "" for s in real.steps if s.kind == "tool")
    facts = [e.fact for e in script.evidence if e.fact]
    return {
        "facts": len(facts),
        "facts_verbatim": sum(f in seen for f in facts),
        "facts_normalized": sum(facts_found(facts, seen)),
    }


def run_fidelity(
    rendered_dir: str | Path,
    policy: str = "expert",
    tasks: Iterable[str] | None = None,
    limit: int | None = None,
    sim: str = "sim",
    real_options: dict[str, Any] | None = None,
    limits: Limits | None = None,
    out_dir: str | Path | None = None,
    console: Console | None = None,
    policy_options: dict[str, Any] | None = None,
    config: RunConfig | None = None,
) -> FidelityReport:
    """Run every rendered episode (at most `limit` per task kind) in the simulator and in real perception with the
    same policy (a component name: `expert`, `gguf`, ...) on the one items path (`config`: concurrency, retries,
    per-try timeout, resume); print the table and return the report."""
    from agentcvr.components import perception_component, policy_component, recorded
    from scripts_gen.render import load_rendered

    console = console or Console(width=160)
    config = config or RunConfig(concurrency=1)
    wanted = set(tasks) if tasks else None
    chosen: list[tuple[Script, Episode]] = []
    per_task: dict[str, int] = {}
    for script, episode in load_rendered(rendered_dir):
        if (wanted is None or script.task in wanted) and per_task.get(script.task, 0) < (limit or 10**9):
            chosen.append((script, episode))
            per_task[script.task] = per_task.get(script.task, 0) + 1
    scripts = {script.id: script for script, _ in chosen}
    policy_part = policy_component(policy, **(policy_options or {}))
    sim_part, real_part = perception_component(sim), perception_component("real", **(real_options or {}))
    limits = limits or Limits()
    spec = RunSpec(
        policy=recorded(policy_part), perception=recorded(real_part), reference=recorded(sim_part), limits=limits
    )
    out = Path(out_dir) / "pairs.jsonl" if out_dir else None
    # What an earlier run into `out` finished is read back (or refused) before any model loads.
    _, done = pending([EpisodeItem(episode) for _, episode in chosen], out, config.resume, spec)
    if done:
        console.print(f"resumed: {len(done)} episodes read back from {out}", markup=False)
    predictor, close = agent_predictor(policy_part, real_part, limits, scripts, config.concurrency, reference=sim_part)
    started = time.perf_counter()
    try:
        pairs, failed = run_pairs(chosen, predictor, spec, out, config, console)
    finally:
        close()
    report = FidelityReport(pairs, policy, sim, time.perf_counter() - started, spec, failed)
    console.print(report.table())
    if out:
        (out.parent / "fidelity.json").write_text(json.dumps(report.summary(), indent=1))
    return report


def run_pairs(
    chosen: Sequence[tuple[Script, Episode]],
    predictor: AgentPredictor,
    spec: RunSpec,
    out: Path | None,
    config: RunConfig,
    console: Console,
) -> tuple[list[Pair], dict[str, str]]:
    """Every episode through `predictor` (its reference run, then its main one) on `eval.runner.run_items`: one record
    per episode in `out` with both traces, resumed only under `spec`. Returns the pairs of the finished episodes, in
    episode order, and why each failed one failed (after its tries: it has no pair)."""
    scripts = {script.id: script for script, _ in chosen}
    episodes = {episode.id: episode for _, episode in chosen}
    shown = iter(range(1, len(chosen) + 1))

    def show(record: Record) -> None:
        where = f"[{next(shown)}/{len(chosen)}] {record.key}:"
        if record.status != "ok" or record.result is None or record.reference is None:
            console.print(f"{where} failed after {record.attempts} tries: {record.error}", markup=False, style="red")
            return
        seconds = sum(_call_seconds(record.result))
        console.print(
            f"{where} sim {record.reference.answer!r} real {record.result.answer!r} ({seconds:.1f} s real perception)",
            markup=False,  # the answers are the models' text
            highlight=False,
        )

    items = [EpisodeItem(episode) for _, episode in chosen]
    records = asyncio.run(
        run_items(items, predictor, out, config, spec=spec, grade=grade_episode, console=console, on_record=show)
    )
    pairs, failed = [], {}
    for record in records:
        if record.status == "ok" and record.result is not None and record.reference is not None:
            pairs.append(compare(episodes[record.key], record.reference, record.result, scripts[record.key]))
        else:
            failed[record.key] = record.error or "failed"
    return pairs, failed


def _row(task: str, pairs: list[Pair]) -> TaskRow:
    agreements = [p.agree for p in pairs if p.agree is not None]
    ious = [p.iou for p in pairs if p.iou is not None]
    sim_calls = [s for p in pairs for s in p.sim_call_seconds]
    real_calls = [s for p in pairs for s in p.real_call_seconds]
    return TaskRow(
        task=task,
        episodes=len(pairs),
        overlap=sum(agreements) / len(agreements) if agreements else None,
        iou=statistics.fmean(ious) if ious else None,
        sim_accuracy=statistics.fmean(p.sim_score for p in pairs) if pairs else 0.0,
        real_accuracy=statistics.fmean(p.real_score for p in pairs) if pairs else 0.0,
        sim_call_ms=1000 * statistics.fmean(sim_calls) if sim_calls else 0.0,
        real_call_ms=1000 * statistics.fmean(real_calls) if real_calls else 0.0,
        calls=len(real_calls),
        real_errors=sum(len(p.real_errors) for p in pairs),
        facts=sum(p.facts for p in pairs),
        facts_verbatim=sum(p.facts_verbatim for p in pairs),
        facts_normalized=sum(p.facts_normalized for p in pairs),
    )


def _normal(task, answer: str | None) -> str | None:
    if answer is None:
        return None
    normalized = task.normalize(answer)
    return normalized if normalized is not None else answer.strip()


def _call_seconds(result: EpisodeResult) -> list[float]:
    return [s.tool_seconds for s in result.steps if s.kind in ("tool", "tool_error")]


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"


def fidelity_command(
    rendered: Annotated[Path, typer.Argument(help="A folder written by `agentcvr render`.")],
    policy: Annotated[
        str, typer.Option(help="The policy run both ways: expert, gguf, openai:MODEL, hf:DIR.")
    ] = "expert",
    sim: Annotated[str, typer.Option(help="Simulated perception to compare with: sim or llm-sim.")] = "sim",
    task: Annotated[list[str] | None, typer.Option(help="Only these task kinds (repeatable).")] = None,
    limit: Annotated[int | None, typer.Option(help="Episodes per task kind.", min=1)] = None,
    max_turns: Annotated[int, typer.Option(help=MAX_TURNS_HELP, min=1)] = 20,
    base_url: Annotated[str | None, typer.Option(help="OpenAI-compatible URL for openai:MODEL.")] = None,
    vlm_url: Annotated[str | None, typer.Option(help="Use a VLM at this URL as the visual agent.")] = None,
    vlm_model: Annotated[str | None, typer.Option(help="The VLM's served model name.")] = None,
    out: Annotated[Path | None, typer.Option(help="Folder for pairs.jsonl and fidelity.json.")] = None,
    resume: Resume = False,
    concurrency: Concurrency = 1,
    retries: Retries = 3,
    timeout: Timeout = 900.0,
    option: ComponentOption = None,
) -> None:
    """Sim-to-real fidelity: run the same rendered episodes in the simulator and in real perception. Episodes go
    through the same engine as `run` (retries, per-try timeout, --resume): OUT/pairs.jsonl holds one record per
    episode with both traces and the run spec, and --resume continues it only under the same spec."""
    vlm: dict[str, Any] = {}
    if vlm_url:
        if not vlm_model:
            raise typer.BadParameter("--vlm-url needs --vlm-model")
        vlm = {"visual": "vlm", "vlm": {"base_url": vlm_url, "model": vlm_model}}
    try:
        policy_options, real_options = component_options({"base_url": base_url}, vlm, option or [])
        run_fidelity(
            rendered,
            policy,
            task,
            limit,
            sim,
            {"video_root": str(rendered), **real_options},
            Limits(max_turns=max_turns),
            out,
            policy_options=policy_options,
            config=RunConfig(concurrency=concurrency, retries=retries, timeout=timeout, resume=resume),
        )
    except (FileNotFoundError, FileExistsError, ValueError) as error:
        raise typer.BadParameter(str(error)) from None


if __name__ == "__main__":
    typer.run(fidelity_command)
