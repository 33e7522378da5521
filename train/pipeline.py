"""`agentcvr train-sim`, top to bottom: config -> scripts -> teacher trajectories -> tokenizer + model -> warm-start SFT
-> held-out evaluation -> GRPO in the simulator -> held-out evaluation -> curves and report.

Every stage leaves its result in the run folder, so `--resume` after a crash (even kill -9) skips finished stages,
continues the warm start after its last complete epoch, and continues GRPO from its last complete checkpoint with the
same step counter; the metrics log is cut back to that step, so no step is lost or counted twice.
Layout of a run folder:

    config.yaml            resolved config + package versions
    warmstart/             SFT model, tokenizer, policy.json (action format), tools.json (tool calls only),
                           sft.json, sft_loss.png, DONE (while it trains: sft_checkpoint.pt, tokenizer/)
    eval_teacher.json  eval_warmstart.json  eval_final.json   (+ *_reading: the teacher looks, the policy answers)
    base/                  a gguf:NAME pretrained model dequantized (model.name_or_path), where one is named
    grpo/checkpoint-N/     Trainer checkpoints (model, optimizer, RNG, trainer_state.json)
    metrics.jsonl  tb/     per-step GRPO metrics (JSONL and TensorBoard)
    final/                 the trained policy: `agentcvr run --policy hf:RUN/final`; DONE holds its step
    final-N/               an earlier final/ (step N) and its eval_final*.json, set aside when a resume goes on
                           because grpo.max_steps grew past N or the wall clock stopped it short
    grpo_curves.png  report.json  report.md
"""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

import yaml
from rich.console import Console

from agentcvr.components import make_policy, make_training_perception
from agentcvr.interfaces import Limits, Perception, Policy
from agentcvr.script import Script
from train.config import RUN_CONFIG, TrainConfig
from train.resume import check_resumable

if TYPE_CHECKING:
    from train.forced_plan import Anchor, TeacherConversations
    from train.rollout import Start


def versions() -> dict[str, str]:
    import importlib.metadata as md

    found = {"python": platform.python_version()}
    for name in ("agentcvr", "torch", "transformers", "trl", "tokenizers", "accelerate", "datasets"):
        try:
            found[name] = md.version(name)
        except md.PackageNotFoundError:
            pass
    return found


def make_scripts(cfg: TrainConfig) -> tuple[list[Script], list[Script], list[Script]]:
    """SFT scripts, GRPO scripts (fresh indices of the training seed) and held-out scripts (another seed)."""
    from scripts_gen.generate import generate, generate_one

    d = cfg.data
    if d.heldout_seed == d.train_seed:
        raise ValueError("data.heldout_seed must differ from data.train_seed")
    sft = [generate_one(task, i, d.train_seed) for task in d.tasks for i in range(d.train_count(task))]
    grpo = [
        generate_one(task, i, d.train_seed)
        for task in d.tasks
        for i in range(d.train_count(task), d.train_count(task) + d.grpo_count(task))
    ]
    heldout = [s for task in d.tasks for s in generate(task, d.heldout_per_task, d.heldout_seed)]
    if cfg.methods.jigsaw.enabled:  # OmniJigsaw pretraining: the GRPO prompts become puzzles made from those scripts
        from train.methods.jigsaw import jigsaw_script

        j = cfg.methods.jigsaw
        grpo = [jigsaw_script(s, j.n_clips, j.trim, j.mode, seed=cfg.seed + i) for i, s in enumerate(grpo)]
    return sft, grpo, heldout


def stop_anchor_scripts(cfg: TrainConfig) -> list[Script]:
    """The scripts whose teacher's stop `grpo.stop_anchor_counts` adds to the anchor: the training seed's indices
    after each kind's GRPO scripts, so none is a prompt or a warm-start episode."""
    from scripts_gen.generate import generate_one

    d = cfg.data
    return [
        generate_one(task, d.train_count(task) + d.grpo_count(task) + i, d.train_seed)
        for task, count in cfg.grpo.stop_anchor_counts.items()
        for i in range(count)
    ]


REFERENCE_ADAPTER = "ref"  # the frozen copy of a continued adapter that TRL adds as the KL reference
SFT_CHECKPOINT = "sft_checkpoint.pt"  # the warm start's last complete epoch (removed once the policy is saved)


class Run:
    """One train-sim run in a folder; each method is a stage that can be skipped when its output exists."""

    def __init__(self, cfg: TrainConfig, out: Path, resume: bool = False, console: Console | None = None):
        self.cfg, self.out, self.resume = cfg, Path(out), resume
        self.console = console or Console()
        self.limits = Limits(max_turns=cfg.agent.max_turns, max_observation_chars=cfg.agent.max_observation_chars)
        self.timings: dict[str, float] = {}

    def log(self, message: str) -> None:
        self.console.print(message)
        with (self.out / "train.log").open("a") as handle:
            handle.write(f"{time.strftime('%H:%M:%S')} {message}\n")

    # -- stages ---------------------------------------------------------------------------------------------------

    def prepare(self) -> None:
        if self.out.exists() and any(self.out.iterdir()) and not self.resume and world_size() == 1:
            raise FileExistsError(f"{self.out} is not empty: pass --resume to continue it, or choose another --out")
        if self.resume:
            check_resumable(self.out, self.cfg.model_dump(mode="json"))  # one run, one config
        self.out.mkdir(parents=True, exist_ok=True)
        resolved = {**self.cfg.model_dump(), "versions": versions()}
        (self.out / RUN_CONFIG).write_text(yaml.safe_dump(resolved, sort_keys=False))
        started = time.perf_counter()
        self.sft_scripts, self.grpo_scripts, self.heldout = make_scripts(self.cfg)
        self.timings["scripts"] = time.perf_counter() - started
        self.log(
            f"scripts: {len(self.sft_scripts)} warm-start, {len(self.grpo_scripts)} GRPO, "
            f"{len(self.heldout)} held-out (seed {self.cfg.data.heldout_seed}), tasks {self.cfg.data.tasks}"
        )

    def warm_start(self) -> str:
        """Expert trajectories -> tokenizer + tiny model -> SFT to convergence; returns the warm-start folder (or,
        without SFT, the pretrained model's name: the paper runs RL straight from the instruct model)."""
        from agentcvr.actions import tool_schemas
        from train import sft
        from train.tiny_model import (
            build_tiny_model,
            load_policy_model,
            parameter_count,
            pretrained_source,
            trainable_count,
            with_lora,
        )
        from train.tokenizer import train_tokenizer
        from train.trajectories import scripts_by_id, teacher_conversations

        if not self.cfg.sft.enabled:
            if self.cfg.model.kind != "pretrained" or not self.cfg.model.name_or_path:
                raise ValueError("without the warm start (sft.enabled=false) the policy must be model.kind=pretrained")
            return pretrained_source(self.cfg.model, self.out / "base")
        if world_size() > 1:
            raise RuntimeError("the warm start runs in one process: run it first without accelerate, then --resume")
        folder = self.out / "warmstart"
        if (folder / "DONE").exists():
            self.log(f"warm start: reusing {folder}")
            if not (folder / "config.json").exists() or not any(folder.glob("*.safetensors")):
                self.merge_adapter(folder)
            return str(folder)
        checkpoint = folder / SFT_CHECKPOINT
        if not (self.resume and checkpoint.exists()):  # no epoch to continue: start the warm start afresh
            shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        table = scripts_by_id(self.sft_scripts)
        protocol = self.cfg.agent.protocol
        conversations, results = teacher_conversations(
            self.sft_scripts,
            self.teacher(table),
            make_training_perception(self.cfg, table),
            self.limits,
        )
        tools = tool_schemas() if protocol == "tools" else None  # the JSON protocol's system prompt describes them
        if self.cfg.model.kind == "tiny":
            from train.tokenizer import boilerplate, load_tokenizer, mark_plain, render_with_template

            texts = render_with_template(conversations, tools)
            tokenizer_folder = folder / "tokenizer"
            if checkpoint.exists():  # the epochs so far were trained on this tokenizer's ids
                tokenizer = load_tokenizer(str(tokenizer_folder))
            else:
                fixed = boilerplate(tools, protocol)
                tokenizer = train_tokenizer(
                    texts, vocab_size=self.cfg.model.vocab_size, fixed=fixed, split_digits=self.cfg.model.split_digits
                )
                tokenizer.save_pretrained(tokenizer_folder)
                mark_plain(tokenizer_folder)
            model = build_tiny_model(self.cfg.model, tokenizer, seed=self.cfg.seed)
        else:
            from transformers import AutoTokenizer

            base = pretrained_source(self.cfg.model, self.out / "base")
            tokenizer = AutoTokenizer.from_pretrained(base)
            model = load_policy_model(self.cfg.model, base)
            if self.cfg.model.lora_rank:
                model = with_lora(model, self.cfg.model)
            texts = sft.render(tokenizer, conversations, tools)
        self.timings["trajectories"] = time.perf_counter() - started
        self.log(
            f"warm start: {len(conversations)} {self.cfg.sft.teacher} trajectories, tokenizer {len(tokenizer)} tokens, "
            f"model {parameter_count(model) / 1e6:.2f} M parameters, {trainable_count(model) / 1e6:.2f} M trained"
        )
        result = sft.train_sft(
            model,
            tokenizer,
            texts,
            self.cfg.sft,
            seed=self.cfg.seed,
            log=self.log,
            checkpoint=checkpoint,
            kinds=[r.task for r in results if r.answer is not None],  # the conversations' kinds, in order
        )
        sft.save_result(result, folder / "sft.json")
        sft.plot_sft(result, folder / "sft_loss.png")
        self.log(
            f"warm start: {result.stopped} after {result.epochs} epochs / {result.steps} steps "
            f"in {result.seconds:.0f} s, best validation loss {result.best_val:.4f} ({folder}/sft_loss.png)"
        )
        self.save_policy(model, tokenizer, folder)
        checkpoint.unlink(missing_ok=True)  # the saved policy replaces it
        (folder / "DONE").write_text("ok")
        self.timings["warm_start"] = time.perf_counter() - started
        return str(folder)

    def teacher(self, scripts: Mapping[str, Script]) -> Policy:
        """The warm start's teacher, writing the run's protocol; the scan's looks (also the search teacher's) at
        `sft.teacher_frames`."""
        sft = self.cfg.sft
        options = {"scan_frames": sft.teacher_frames} if sft.teacher in ("scan", "search") else {}
        if sft.teacher == "search":
            options["share"] = sft.teacher_search_share
        return make_policy(sft.teacher, scripts, protocol=self.cfg.agent.protocol, **options)

    def evaluate(self, name: str, policy_dir: str | None, teacher_looks: bool = False) -> dict:
        """Held-out evaluation of a saved policy (or of the teacher when `policy_dir` is None), cached as JSON. With
        `teacher_looks` the teacher (`sft.teacher`) makes the calls and the policy only answers: its reading, apart
        from looking."""
        from agentcvr.policies.hf_policy import HFPolicy
        from train.evaluate import evaluate
        from train.reader import load_reader
        from train.trajectories import scripts_by_id

        path = self.out / f"eval_{name}.json"
        if path.exists():
            return json.loads(path.read_text())
        table = scripts_by_id(self.heldout)
        teacher = self.teacher(table)
        if policy_dir is None:
            policy = teacher
        else:
            e = self.cfg.eval
            policy = HFPolicy(
                policy_dir,
                temperature=e.temperature,
                max_new_tokens=e.max_new_tokens,
                device=e.device,
            )
        report = evaluate(
            policy,
            self.heldout,
            make_training_perception(self.cfg, table),
            self.limits,
            batch_size=self.cfg.eval.batch_size,
            teacher_looks=teacher if teacher_looks else None,
            reader=load_reader(self.cfg.agent.reader),  # the reader answers the choice tasks
        )
        path.write_text(json.dumps(report, indent=1))
        overall = report["overall"]
        self.log(
            f"held-out {name}: success {overall['success']:.1%}, turns {overall['turns']:.2f}, "
            f"tool calls {overall['tool_calls']:.2f} ({report['seconds']:.0f} s)"
        )
        return report

    def grpo(self, warm_start: str) -> str:
        """GRPO from the warm start; resumes from the last complete checkpoint. Returns the final policy folder (the
        warm start's own when `grpo.max_steps` is 0)."""
        if self.cfg.grpo.max_steps == 0:
            self.log("GRPO: skipped (grpo.max_steps=0): the warm start is the result")
            return warm_start
        from transformers.trainer_callback import PrinterCallback

        from train.monitoring import (
            CompletionMarker,
            MetricsLogger,
            RichProgress,
            WallClockLimit,
            last_complete_checkpoint,
            truncate_metrics,
        )

        final = self.out / "final"
        if (final / "DONE").exists():
            recorded = (final / "DONE").read_text().strip()
            if not recorded.isdigit():
                raise ValueError(
                    f"{final / 'DONE'} holds {recorded!r}, not the step GRPO stopped at: move {final} aside to train "
                    "again from the last checkpoint"
                )
            done = int(recorded)
            if not 0 < done < self.cfg.grpo.max_steps:
                self.log(f"GRPO: reusing {final} (step {done})")
                return str(final)
            if int(os.environ.get("RANK", "0")) == 0:  # one process moves it; every process goes on
                kept = self.set_aside_final(done)
                self.log(
                    f"GRPO: final/ stopped at step {done} of {self.cfg.grpo.max_steps}: kept as {kept.name}/; going "
                    "on from the last checkpoint"
                )
        grpo_dir, metrics = self.out / "grpo", self.out / "metrics.jsonl"
        grpo_dir.mkdir(exist_ok=True)
        checkpoint = last_complete_checkpoint(grpo_dir)
        if checkpoint is not None:
            step = int(checkpoint.name.rsplit("-", 1)[1])
            dropped = truncate_metrics(metrics, step) if metrics.exists() else 0
            self.log(f"GRPO: resuming from {checkpoint.name} (step {step}; {dropped} later metric rows dropped)")
            for torn in grpo_dir.glob("checkpoint-*"):  # newer, incomplete checkpoints from the crash
                if torn != checkpoint and int(torn.name.rsplit("-", 1)[1]) > step:
                    shutil.rmtree(torn, ignore_errors=True)
        elif metrics.exists():
            metrics.unlink()
        clock = WallClockLimit(self.cfg.grpo.max_seconds)
        callbacks = [MetricsLogger(metrics), RichProgress(self.console), clock, CompletionMarker()]
        trainer, tokenizer = self.grpo_trainer(warm_start, grpo_dir, callbacks)
        trainer.remove_callback(PrinterCallback)  # the rich bar and metrics.jsonl replace raw log printing
        started = time.perf_counter()
        trainer.train(resume_from_checkpoint=str(checkpoint) if checkpoint else None)
        self.timings["grpo"] = time.perf_counter() - started
        if clock.stopped_early:
            self.log(
                f"GRPO: stopped by the {self.cfg.grpo.max_seconds:.0f} s wall-clock limit at step "
                f"{trainer.state.global_step}"
            )
        if trainer.is_world_process_zero():
            self.save_policy(trainer.model, tokenizer, final)
            (final / "DONE").write_text(str(trainer.state.global_step))
        return str(final)

    def set_aside_final(self, step: int) -> Path:
        """Moves a finished GRPO's `final/` and its held-out reports to `final-STEP/` (nothing is overwritten), so a
        resume with a larger `grpo.max_steps` goes on from the last checkpoint and evaluates its own result."""
        kept = self.out / f"final-{step}"
        copy = 1
        while kept.exists():
            kept, copy = self.out / f"final-{step}.{copy}", copy + 1
        (self.out / "final").rename(kept)
        for report in self.out.glob("eval_final*.json"):
            report.rename(kept / report.name)
        return kept

    def grpo_trainer(self, warm_start: str, output_dir: Path, callbacks: Sequence = ()):
        """The GRPO trainer over this run's GRPO scripts (prompts longer than `grpo.max_prompt_length` dropped), its
        policy the warm start's, and the tokenizer; also what `benchmarks/grpo_signal.py` samples rollouts from."""
        from datasets import Dataset

        from train.grpo import build_trainer
        from train.tokenizer import load_tokenizer
        from train.trajectories import episodes_by_id, prompt_rows, scripts_by_id

        table = scripts_by_id(self.grpo_scripts)
        tokenizer = load_tokenizer(warm_start)
        self._check_completion_budget(tokenizer)
        perception = make_training_perception(self.cfg, table)  # the rollouts' simulator, the filter's, the teachers'
        prompted = self.prompt_scripts(perception)
        rows = prompt_rows(prompted, self.limits, self.cfg.agent.protocol)
        rows = [r for r in rows if self._prompt_length(tokenizer, r["prompt"]) <= self.cfg.grpo.max_prompt_length]
        conversations = self.teacher_conversations(prompted, perception)
        trainer = build_trainer(
            self.cfg,
            self.grpo_policy(warm_start),
            tokenizer,
            Dataset.from_list(rows),
            episodes_by_id(table),
            perception,
            output_dir,
            self.out / "tb",
            callbacks=callbacks,
            evidence={key: [item.fact for item in script.evidence] for key, script in table.items()},
            starts=self.search_starts(conversations, tokenizer),
            anchors=self.stop_anchors(conversations, tokenizer),
            other_anchors=self.other_stop_anchors(tokenizer),
        )
        return trainer, tokenizer

    def teacher_conversations(self, scripts: Sequence[Script], perception: Perception) -> TeacherConversations:
        """The scan and search teachers' conversations on the GRPO prompts, conversed once for both the forced
        starts and the stop anchors."""
        from train.forced_plan import TeacherConversations

        return TeacherConversations(
            scripts, perception, self.limits, self.cfg.agent.protocol, self.cfg.sft.teacher_frames
        )

    def search_starts(self, conversations: TeacherConversations, tokenizer) -> dict[str, Start]:
        """Where each GRPO prompt's plans part and the search's first tokens there (`grpo.forced_search_share`;
        none when it is 0)."""
        if self.cfg.grpo.forced_search_share == 0:
            return {}
        from train.forced_plan import search_starts

        starts = search_starts(conversations, tokenizer, self.tools)
        self.log(
            f"guided exploration: {self.cfg.grpo.forced_search_share:.0%} of the rollouts of {len(starts)} of "
            f"{len(conversations.episodes)} GRPO prompts start the search after the scan (the others' plans never part)"
        )
        return starts

    def stop_anchors(self, conversations: TeacherConversations, tokenizer) -> dict[str, Anchor]:
        """The search teacher's stop after its looks on each GRPO prompt (`grpo.stop_anchor`; none when it is 0)."""
        if self.cfg.grpo.stop_anchor == 0:
            return {}
        from train.forced_plan import stop_anchors

        anchors = stop_anchors(conversations, tokenizer, self.tools)
        self.log(
            f"stop anchor: weight {self.cfg.grpo.stop_anchor:g} on the search teacher's stop after its looks in "
            f"{len(anchors)} of {len(conversations.episodes)} GRPO prompts"
        )
        return anchors

    def other_stop_anchors(self, tokenizer) -> list[Anchor]:
        """The search teacher's stop after its looks on each `grpo.stop_anchor_counts` script, in a fixed shuffled
        order (a step reads the next `grpo.stop_anchor_per_step` of them), so each step's few mix the kinds."""
        scripts = stop_anchor_scripts(self.cfg)
        if not scripts:
            return []
        import random

        from train.forced_plan import stop_anchors
        from train.plan_filter import per_kind
        from train.trajectories import scripts_by_id

        started = time.perf_counter()
        perception = make_training_perception(self.cfg, scripts_by_id(scripts))
        anchors = stop_anchors(self.teacher_conversations(scripts, perception), tokenizer, self.tools)
        anchored = [s for s in scripts if s.id in anchors]
        ordered = [anchors[s.id] for s in anchored]
        random.Random(self.cfg.seed).shuffle(ordered)
        self.log(
            f"stop anchor on other episodes: {len(ordered)} of {len(scripts)} scripts ({per_kind(anchored)}), "
            f"{self.cfg.grpo.stop_anchor_per_step} a step"
            + (f", a hinge under p={floor}" if (floor := self.cfg.grpo.stop_anchor_floor) else "")
            + f" ({time.perf_counter() - started:.0f} s)"
        )
        return ordered

    def prompt_scripts(self, perception: Perception) -> list[Script]:
        """The GRPO scripts that become prompts (`data.grpo_prompts`); `perception` plays the GRPO scripts."""
        if self.cfg.data.grpo_prompts == "all":
            return self.grpo_scripts
        from train.plan_filter import per_kind, plans_differ

        started = time.perf_counter()
        kept = plans_differ(
            self.grpo_scripts,
            perception,
            self.limits,
            self.cfg.agent.reader,
            self.cfg.sft.teacher_frames,
            self.cfg.reward.dense,
        )
        self.log(
            f"GRPO prompts where the plans' rewards differ: {len(kept)} of {len(self.grpo_scripts)} "
            f"({per_kind(kept) or 'none'}; {time.perf_counter() - started:.0f} s)"
        )
        if not kept:
            raise ValueError(
                "data.grpo_prompts=plans_differ kept no GRPO script: no episode's reward changes with the search "
                f"(kinds {sorted({s.task for s in self.grpo_scripts})}, reader {self.cfg.agent.reader})"
            )
        return kept

    # -- helpers --------------------------------------------------------------------------------------------------

    def _check_completion_budget(self, tokenizer, per_kind: int = 8) -> None:
        """Refuse a GRPO budget that cuts the teacher's episodes (`train/budget.py`), measured on the first
        `per_kind` GRPO scripts of each kind; the longest per kind goes to the log."""
        from train.budget import check_completion_budget, teacher_completion_tokens
        from train.trajectories import scripts_by_id

        kinds = {kind: [s for s in self.grpo_scripts if s.task == kind][:per_kind] for kind in self.cfg.data.tasks}
        sample = [script for scripts in kinds.values() for script in scripts]
        table = scripts_by_id(sample)
        teacher = self.teacher(table)
        perception = make_training_perception(self.cfg, table)
        tokens = functools.partial(self._prompt_length, tokenizer)  # (messages, generation_prompt) -> tokens
        lengths = teacher_completion_tokens(teacher, perception, sample, self.limits, tokens)
        longest = ", ".join(f"{kind} {max(values)}" for kind, values in lengths.items())
        budget = self.cfg.grpo.max_completion_length
        self.log(f"GRPO completion budget {budget} tokens; the teacher's longest episode per kind: {longest}")
        check_completion_budget(lengths, budget, self.cfg.sft.teacher)

    @functools.cached_property
    def tools(self) -> list[dict] | None:
        """The tool schemas the chat template renders (the tools protocol's), None for the JSON protocol."""
        from agentcvr.actions import tool_schemas

        return tool_schemas() if self.cfg.agent.protocol == "tools" else None

    def _prompt_length(self, tokenizer, messages: list[dict], generation_prompt: bool = True) -> int:
        rendered = tokenizer.apply_chat_template(
            messages, tools=self.tools, add_generation_prompt=generation_prompt, return_dict=True
        )
        return len(rendered["input_ids"])

    def grpo_policy(self, warm_start: str):
        """What GRPO trains: the warm start's folder, or, for a LoRA warm start, its adapter continued over the base
        (the result then ships as an adapter too). TRL keeps a frozen copy of that adapter as the KL reference."""
        from agentcvr.masters import ADAPTER_FOLDER

        adapter = Path(warm_start) / ADAPTER_FOLDER
        if not adapter.is_dir():
            return warm_start
        return self.adapted(adapter, trainable=True)

    def adapted(self, adapter: Path, trainable: bool = False):
        """The base model (`model.name_or_path`, dequantized into `base/` once) with a saved peft adapter on it."""
        from peft import PeftModel

        from train.tiny_model import load_policy_model, pretrained_source

        base = load_policy_model(self.cfg.model, pretrained_source(self.cfg.model, self.out / "base"))
        return PeftModel.from_pretrained(base, str(adapter), is_trainable=trainable)

    def merge_adapter(self, folder: Path) -> None:
        """Rebuild a LoRA warm start's merged weights from the base and its `adapter/`: a warm start travels as its
        adapter alone (SmolLM2-135M: 9 MB against 540 MB merged), e.g. to a GPU machine that continues with GRPO."""
        from agentcvr.masters import ADAPTER_FOLDER

        adapter = folder / ADAPTER_FOLDER
        if not adapter.is_dir():
            raise FileNotFoundError(f"{folder} is marked DONE but holds neither merged weights nor {ADAPTER_FOLDER}/")
        if self.cfg.model.kind != "pretrained" or not self.cfg.model.lora_rank:
            raise ValueError(f"{folder} holds only a LoRA adapter: resume it with model.kind=pretrained and lora_rank")
        from transformers import AutoTokenizer

        from train.tiny_model import pretrained_source

        model = self.adapted(adapter)
        base = pretrained_source(self.cfg.model, self.out / "base")  # made by `adapted`: only resolved here
        tokenizer = AutoTokenizer.from_pretrained(folder if (folder / "tokenizer.json").exists() else base)
        self.log(f"warm start: merging {adapter} into {base}'s weights")
        save_policy(
            model.merge_and_unload(),
            tokenizer,
            folder,
            plain_tokenizer=False,
            protocol=self.cfg.agent.protocol,
            base=self.cfg.model.name_or_path,
            turn_tokens=self.cfg.agent.max_turn_tokens,
        )

    def save_policy(self, model, tokenizer, folder: Path) -> None:
        """A LoRA model keeps its adapter in `adapter/` (what ships) beside the merged weights (what evaluation
        and GRPO load in torch)."""
        from peft import PeftModel

        from agentcvr.masters import ADAPTER_FOLDER

        if isinstance(model, PeftModel):
            if REFERENCE_ADAPTER in model.peft_config:
                model.delete_adapter(REFERENCE_ADAPTER)
            model.save_pretrained(folder / ADAPTER_FOLDER)
            model = model.merge_and_unload()
        save_policy(
            model,
            tokenizer,
            folder,
            plain_tokenizer=self.cfg.model.kind == "tiny",
            protocol=self.cfg.agent.protocol,
            base=self.cfg.model.name_or_path if self.cfg.model.kind == "pretrained" else None,
            turn_tokens=self.cfg.agent.max_turn_tokens,
        )
        (folder / "train_config.yaml").write_text(yaml.safe_dump(self.cfg.model_dump(), sort_keys=False))


def save_policy(
    model,
    tokenizer,
    folder: Path,
    plain_tokenizer: bool = True,
    protocol: str = "tools",
    base: str | None = None,
    turn_tokens: int | None = None,
) -> None:
    """A checkpoint `HFPolicy` runs as trained: weights, tokenizer (loaded as saved), its action format, the
    pretrained base it started from (what a packed LoRA master runs over), the tokens a turn was given in training
    and, for tool calls, the tool schemas."""
    from agentcvr.actions import tool_schemas
    from agentcvr.policies.hf_policy import POLICY_FILE, TOOLS_FILE, TURN_TOKENS
    from train.tokenizer import mark_plain

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    if plain_tokenizer:
        mark_plain(folder)
    spec = (
        {"protocol": protocol} | ({"base": base} if base else {}) | ({TURN_TOKENS: turn_tokens} if turn_tokens else {})
    )
    (folder / POLICY_FILE).write_text(json.dumps(spec))
    if protocol == "tools":
        (folder / TOOLS_FILE).write_text(json.dumps(tool_schemas(), indent=1))


def run_train_sim(cfg: TrainConfig, out: Path, resume: bool = False, console: Console | None = None) -> dict:
    """The whole pipeline; returns the report (also written to report.json / report.md)."""
    from train.evaluate import comparison_table
    from train.monitoring import plot_curves, read_metrics

    run = Run(cfg, out, resume, console)
    started = time.perf_counter()
    run.prepare()
    warm = run.warm_start()
    reports: dict[str, dict] = {}
    reading: dict[str, dict] = {}  # the teacher looks, the policy answers: reading apart from looking
    evaluate = cfg.eval.enabled and world_size() == 1  # several processes: evaluate the saved policy afterwards
    if evaluate:
        reports["teacher"] = run.evaluate("teacher", None)
        reports["warmstart"] = run.evaluate("warmstart", warm)
        if cfg.eval.reading:
            reading["warmstart"] = run.evaluate("warmstart_reading", warm, teacher_looks=True)
    final = run.grpo(warm)
    if world_size() > 1 and int(os.environ.get("RANK", "0")) != 0:
        return {}
    grpo_ran = final != warm  # grpo.max_steps=0 leaves the warm start as the result: nothing new to evaluate or plot
    if evaluate and grpo_ran:
        reports["grpo"] = run.evaluate("final", final)
        if cfg.eval.reading:
            reading["grpo"] = run.evaluate("final_reading", final, teacher_looks=True)
    metrics = read_metrics(run.out / "metrics.jsonl") if grpo_ran else []
    if metrics:
        plot_curves(metrics, run.out / "grpo_curves.png", title=f"train-sim {cfg.name}")
    throughput = _throughput(metrics)
    report = {
        "preset": cfg.name,
        "seconds_this_process": time.perf_counter() - started,
        "timings": run.timings,
        "steps": metrics[-1]["step"] if metrics else 0,
        "throughput": throughput,
        "heldout": reports,
        "heldout_teacher_looks": reading,
    }
    (run.out / "report.json").write_text(json.dumps(report, indent=1))
    table = comparison_table(reports) if reports else ""
    reading_table = comparison_table(reading) if reading else ""
    (run.out / "report.md").write_text(
        f"# train-sim {cfg.name}\n\nHeld-out success:\n\n```\n{table}\n```\n\n"
        f"Reading (the {cfg.sft.teacher} teacher makes the calls, the policy answers):\n\n```\n{reading_table}\n```\n\n"
        f"{json.dumps(throughput)}\n"
    )
    if table:
        run.log(
            f"held-out success per task (teacher = {cfg.sft.teacher}, warmstart = SFT start, grpo = end):\n" + table
        )
        if reading_table:
            run.log(f"reading (the {cfg.sft.teacher} teacher makes the calls, the policy answers):\n" + reading_table)
    if metrics:
        run.log(
            f"throughput: {throughput['completions_per_second']:.2f} completions/s, simulator "
            f"{throughput['simulator_share']:.2%} of step time, {throughput['step_seconds']:.2f} s/step"
        )
    curves = f", curves {run.out}/grpo_curves.png" if metrics else ""
    run.log(f"done in {report['seconds_this_process']:.0f} s: {final}{curves}")
    return report


def world_size() -> int:
    return int(os.environ.get("WORLD_SIZE", "1"))


def _throughput(metrics: list[dict]) -> dict:
    """Completions sampled per second of optimizer steps, over the whole run: the steps that only reuse a sampled
    batch (`grpo.num_iterations` > 1) add their time and no completions."""
    rows = [row for row in metrics if row.get("step_time")]
    if not rows:
        return {"completions_per_second": 0.0, "simulator_share": 0.0, "step_seconds": 0.0}
    seconds = sum(row["step_time"] for row in rows)
    sampled = sum(row.get("throughput/completions_per_second", 0.0) * row["step_time"] for row in rows)
    return {
        "completions_per_second": sampled / seconds,
        "simulator_share": sum(row.get("timing/simulator_seconds", 0.0) for row in rows) / seconds,
        "step_seconds": seconds / len(rows),
    }
