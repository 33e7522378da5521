"""The `train-sim` run configuration: pydantic sections merged from a preset YAML plus `key=value` overrides.

    cfg = load_config("cpu-tiny", ["grpo.max_steps=20", "data.tasks=[NC,CC]"])

A preset is a file in `train/presets/` (or any YAML path); overrides use dotted keys and YAML values. Unknown keys fail
with the valid ones, so a typo never silently trains with a default.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentcvr.actions import MAX_FRAMES
from agentcvr.overrides import apply_override

PRESETS = Path(__file__).parent / "presets"


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def check_counts(name: str, counts: dict[str, int], tasks: list[str]) -> None:
    """Refuse scripts-per-kind counts that name a kind outside `tasks` or are negative."""
    unknown = sorted(set(counts) - set(tasks))
    if unknown:
        raise ValueError(f"{name} names {unknown}, not in data.tasks {tasks}")
    negative = sorted(k for k, n in counts.items() if n < 0)
    if negative:
        raise ValueError(f"{name} must be >= 0; {negative} are not")


class DataConfig(_Section):
    """Which scripts train and which evaluate."""

    tasks: list[str] = Field(default_factory=lambda: ["NC", "CC"], description="Task kinds to generate and train on.")
    train_per_task: int = Field(default=400, description="Scripts per task kind for the warm start (expert runs).")
    train_counts: dict[str, int] = Field(
        default_factory=dict,
        description="Warm-start scripts of the kinds named, in place of train_per_task (e.g. {PSS: 240, NC: 90}): "
        "more trajectories where a decision or an answer is rare.",
    )
    grpo_per_task: int = Field(default=200, description="Further scripts per task kind for GRPO prompts.")
    grpo_counts: dict[str, int] = Field(
        default_factory=dict,
        description="GRPO scripts of the kinds named, in place of grpo_per_task (e.g. {PSS: 600, BU: 0}): prompts "
        "where the policy's rollouts still disagree, since a group whose rollouts all earn one reward teaches "
        "nothing (benchmarks/grpo_signal.py measures which kinds).",
    )
    grpo_prompts: Literal["all", "plans_differ"] = Field(
        default="all",
        description="Which GRPO scripts become prompts: all, or only those whose correctness reward differs between "
        "answering after the scan and after the search teacher's turn (the run's reader answering both; "
        "train/plan_filter.py): where choosing to search changes the reward, so a group holding both plans has an "
        "advantage. For warm starts of sft.teacher=search.",
    )
    heldout_per_task: int = Field(default=50, description="Held-out scripts per task kind (evaluation only).")
    train_seed: int = Field(default=0, description="Generator seed of the training scripts.")
    heldout_seed: int = Field(default=10_000, description="Generator seed of the held-out scripts (must differ).")

    @model_validator(mode="after")
    def _counts_name_trained_kinds(self) -> DataConfig:
        check_counts("data.train_counts", self.train_counts, self.tasks)
        check_counts("data.grpo_counts", self.grpo_counts, self.tasks)
        return self

    def train_count(self, task: str) -> int:
        """Warm-start scripts of one kind; GRPO's scripts of that kind take the indices after them."""
        return self.train_counts.get(task, self.train_per_task)

    def grpo_count(self, task: str) -> int:
        return self.grpo_counts.get(task, self.grpo_per_task)


class ModelConfig(_Section):
    """The policy: a tiny Qwen2 built from a config, or a pretrained checkpoint."""

    kind: Literal["tiny", "pretrained"] = "tiny"
    name_or_path: str | None = Field(
        default=None,
        description="Checkpoint for kind=pretrained: a hub id, a folder, or gguf:NAME (a registry GGUF, `agentcvr "
        "models --list`) / gguf:FILE.gguf, dequantized to float32 once into the run folder (base/).",
    )
    vocab_size: int = Field(default=2048, description="BPE vocabulary trained on the generated corpus (tiny only).")
    split_digits: bool = Field(
        default=True,
        description="Tiny only: BPE sees every digit alone (true) or whole numbers, so frequent ones become single "
        "tokens (false: a call that copies a time from the prompt copies one token, not a run of digits).",
    )
    hidden_size: int = 128
    intermediate_size: int = 384
    num_hidden_layers: int = 4
    num_attention_heads: int = 4
    num_key_value_heads: int = 2
    max_position_embeddings: int = Field(default=2048, description="Longest prompt + episode, in tokens.")
    lora_rank: int = Field(
        default=0,
        ge=0,
        description="Pretrained only: 0 trains every weight; r > 0 trains a LoRA of rank r on lora_targets (peft). "
        "The warm start saves the merged weights (what evaluation and GRPO load) and the adapter alone (adapter/), "
        "which `agentcvr pack-master` ships as a llama.cpp LoRA over the registry GGUF.",
    )
    lora_alpha: float = Field(default=32.0, gt=0, description="LoRA scale numerator: updates are scaled alpha / rank.")
    lora_targets: list[str] = Field(
        default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"],
        description="Linear layers (by name) that get a LoRA.",
    )
    lora_top_layers: int | None = Field(
        default=None,
        ge=1,
        description="LoRA on the top N transformer layers only (None: all). The backward pass then stops at the "
        "lowest adapted layer: SmolLM2-135M with the top 10 of 30 trains 1.7x faster per token on the CPU.",
    )
    dtype: Literal["float32", "bfloat16"] = "float32"
    attn_implementation: str | None = Field(default=None, description="e.g. flash_attention_2 on GPUs.")

    @model_validator(mode="after")
    def _lora_needs_a_pretrained_base(self) -> ModelConfig:
        if self.lora_rank and self.kind != "pretrained":
            raise ValueError("model.lora_rank > 0 needs model.kind=pretrained: a tiny model is trained whole")
        return self


class SimulatorConfig(_Section):
    """What answers observe/listen during training."""

    kind: Literal["rule", "llm"] = Field(default="rule", description="rule: ScriptSimulator; llm: LLM at a URL.")
    max_events: int = Field(default=8, description="Events per observation, ranked by relevance to the focus.")
    sampling: Literal["events", "frames"] = Field(
        default="frames",
        description="frames: a look sees only the events on screen at its num_frames frames, as the real visual "
        "agent does; events: every event overlapping the interval.",
    )
    url: str | None = Field(default=None, description="OpenAI-compatible base URL of the LLM simulator.")
    model: str | None = Field(default=None, description="Model name served at `url`.")
    temperature: float = 0.1
    jitter_seconds: float = 0.0
    drop_probability: float = 0.0
    paraphrase_probability: float = 0.0
    describer_probability: float = Field(
        default=0.0,
        description="Chance each visual line reads as the real frame describer writes a rendered video's "
        "sentence ('Text on screen: \"...\"; colours: ...'): trains looking on the format it serves on.",
    )


class AgentConfig(_Section):
    """Episode limits, shared by training rollouts and held-out evaluation."""

    max_turns: int = Field(default=6, description="Assistant turns per episode, the answer included.")
    max_observation_chars: int = Field(default=600, description="Tool output is cut to this many characters.")
    protocol: Literal["tools", "json"] = Field(
        default="tools", description="How the policy writes actions: tool calls, or the published JSON protocol."
    )
    max_turn_tokens: int = Field(default=128, description="Tokens the policy may sample in one turn.")
    reader: str | None = Field(
        default=None,
        description="A trained reader folder (agentcvr train-reader): it answers the choice tasks in rollouts and "
        "held-out evaluation, so GRPO rewards the policy's looking by what the reader makes of it.",
    )


class SFTConfig(_Section):
    """Warm start: next-token loss on the assistant tokens of expert trajectories, until validation stops improving."""

    enabled: bool = True
    teacher: Literal["expert", "scan", "search"] = Field(
        default="expert",
        description="Whose trajectories: the expert (looks where the script's evidence is), the scan teacher "
        "(looks only where the question points, a policy can imitate it), or the scan followed by the search's turn "
        "(agentcvr/policies/search.py) on `teacher_search_share` of the episodes.",
    )
    teacher_search_share: float = Field(
        default=0.5,
        ge=0.0,
        le=1.0,
        description="With teacher=search: the share of episodes whose scan the search's turn follows (the rest answer "
        "after the scan), so the warm start samples both plans and GRPO can choose between them.",
    )
    teacher_frames: int = Field(
        default=MAX_FRAMES,
        ge=1,
        le=MAX_FRAMES,
        description="Frames each of the scan teacher's whole-video looks asks for (with simulator.sampling=frames a "
        "look sees only what is on screen at its frames, as on footage; 128 is the visual agent's cap).",
    )
    max_epochs: int = 30
    batch_size: int = 16
    learning_rate: float = 2e-3
    weight_decay: float = 0.01
    warmup_steps: int = 30
    patience: int = Field(default=2, description="Epochs without validation improvement before stopping.")
    min_delta: float = Field(default=0.002, description="Relative validation-loss gain that counts as improvement.")
    val_fraction: float = 0.1
    answer_weight: float = Field(default=1.0, description="Loss weight of the answer turn's tokens.")
    max_seconds: float | None = Field(default=None, description="Wall-clock cap; None = run to convergence.")
    checkpoint_minutes: float | None = Field(
        default=10.0,
        ge=0,
        description="Also checkpoint within an epoch this often (a --resume goes on from the next batch); None: only "
        "after each epoch.",
    )
    max_length: int = Field(default=2048, description="Trajectories longer than this (tokens) are dropped.")


class GRPOSection(_Section):
    """GRPO settings (TRL GRPOConfig fields, plus ours)."""

    num_generations: int = 8
    prompts_per_step: int = Field(default=2, description="Distinct episodes per optimizer step (x G rollouts).")
    gradient_accumulation_steps: int = Field(
        default=1,
        ge=1,
        description="Micro-batches a step's rollouts are split into for the backward pass: less memory, the same "
        "rollouts and one optimizer step (a 135M policy's 32 rollouts of 2,560 tokens hold ~60 GB in one batch).",
    )
    steps_per_generation: int | None = Field(
        default=None,
        description="Micro-batches per generation batch; None = gradient_accumulation_steps (one generation a step).",
    )
    learning_rate: float = 5e-5
    lr_scheduler_type: str = "constant"
    warmup_steps: int = 0
    max_grad_norm: float = 1.0
    beta: float = Field(default=0.005, description="KL coefficient against the warm-start reference.")
    epsilon: float = 0.2
    loss_type: str = "dapo"
    scale_rewards: str = "group"
    num_iterations: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    forced_search_share: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="Guided exploration: the share of each group's rollouts whose turn after the scan starts with the "
        "search's first tokens (where the scan teacher answers and the search teacher looks; train/forced_plan.py), "
        "the policy writing the rest. The forced tokens stay in the loss, so the group's advantage trains the choice "
        "itself, which a warm start samples too rarely for GRPO to see it win. Needs a warm start that saw the "
        "search (sft.teacher=search); with vLLM it turns off TRL's importance-sampling correction.",
    )
    trained_tokens: Literal["all", "plan", "decisions"] = Field(
        default="all",
        description="The policy tokens the GRPO loss trains: all of them, or only the plan token (with "
        "grpo.forced_search_share: the one token after the scan where the scan's plan answers and the search's looks), "
        "so the outcome trains the choice of plan and leaves how each plan is carried out as the warm start taught it. "
        "Rollouts that never reach that token (another form of the turn, or a prompt whose plans never part) then "
        "train nothing. The token is the same in every turn's context, so `plan` alone raised it after the search "
        "too and the master never answered (session 34); `decisions` trains it in every turn (look again or answer).",
    )
    stop_anchor: float = Field(
        default=0.0,
        ge=0.0,
        description="Weight, against the step's GRPO loss, of a supervised term: the negative log-likelihood of the "
        "search teacher's answer after its looks, on the batch's episodes (train/forced_plan.py `stop_anchors`), "
        "logged as anchor/stop_p. Raising the search let this stop fall (sessions 37-38); the same token decides the "
        "plan after the scan, so the anchor lowers the search too (session 39: weight 8 took it 7.8 -> 2.4 %, weight 1 "
        "halved the stop's fall; session 40: four updates at 1 made the teacher's plan on fresh MOC episodes). Needs "
        "sft.teacher=search.",
    )
    stop_anchor_counts: dict[str, int] = Field(
        default_factory=dict,
        description="Further scripts of the kinds named (the training seed's indices after the GRPO scripts; e.g. "
        "{BU: 40, CC: 40}) whose search teacher's stop after its looks `grpo.stop_anchor` also holds, "
        "`grpo.stop_anchor_per_step` of them a step in turn, as a second term of the same weight: episodes GRPO does "
        "not prompt, where the teacher stops after the scan. More updates spread the search GRPO rewards to such "
        "kinds and lost episodes the scan answered (session 48: BU, CC). Logged as anchor/other_stop_p.",
    )
    stop_anchor_per_step: int = Field(
        default=2, ge=1, description="Of the `grpo.stop_anchor_counts` scripts' anchors, how many a step reads."
    )
    stop_anchor_floor: float = Field(
        default=0.0,
        ge=0.0,
        lt=1.0,
        description="Where > 0, the `grpo.stop_anchor_counts` term is a hinge: max(0, log floor - log p) for each "
        "stop p, zero (and no gradient) while the stop holds at the floor or above, so it trains only where the "
        "search GRPO rewards spreads to those kinds. 0: their plain negative log-likelihood, which pulls every stop "
        "up and held every answer at the warm start's (session 49, weight 1: 99 of 100 the same). Logged as "
        "anchor/other_below_floor, the share of the step's stops under it.",
    )
    prefix_cache: bool = Field(
        default=False,
        description="Run each rollout turn's context only past the longest prefix kept from an earlier turn of the "
        "batch, then sample the rows together over their merged caches (train/rollout.py `PrefixCacheSampler`), "
        "instead of one left-padded batch of every turn's whole context: a group's rollouts share their prompt and a "
        "rollout's turns their past (timing/context_run: context tokens run per token asked for; session 43: a "
        "seventh, 1.35x on the rollouts, whose rest is decoding). Without vLLM only.",
    )
    max_completion_length: int = Field(default=768, description="Tokens of the whole multi-turn completion.")
    max_prompt_length: int = Field(default=1024, description="Longer prompts are dropped from the dataset.")
    max_steps: int = Field(
        default=60,
        description="Optimizer steps; -1 = run num_train_epochs over the prompts; 0 = no GRPO (the warm start is the "
        "result).",
        ge=-1,
    )
    num_train_epochs: float = 1.0
    max_seconds: float | None = Field(default=None, description="Stop GRPO after this wall time (checked per step).")
    save_steps: int = 10
    save_total_limit: int = 2
    logging_steps: int = 1
    use_vllm: bool = False
    vllm_mode: Literal["server", "colocate"] = "colocate"
    vllm_server_base_url: str | None = None
    vllm_gpu_memory_utilization: float = 0.3
    bf16: bool = False
    gradient_checkpointing: bool = False
    use_cpu: bool = True
    deepspeed: str | None = Field(default=None, description="DeepSpeed JSON config (multi-GPU presets).")
    report_to: list[str] = Field(default_factory=lambda: ["tensorboard"])

    @property
    def rollouts_per_step(self) -> int:
        return self.prompts_per_step * self.num_generations

    @model_validator(mode="after")
    def _micro_batches_split_the_rollouts(self) -> GRPOSection:
        if self.rollouts_per_step % self.gradient_accumulation_steps:
            raise ValueError(
                f"grpo.gradient_accumulation_steps={self.gradient_accumulation_steps} must divide the "
                f"{self.rollouts_per_step} rollouts of a step (prompts_per_step x num_generations)"
            )
        return self


class RewardConfig(_Section):
    """Correctness from the task registry, a format bonus and, optionally, the evidence process reward and a cost
    per turn."""

    dense: bool = Field(default=False, description="Dense correctness (IoU for FSA, position accuracy for PSS).")
    format_bonus: float = Field(default=0.1, description="Paid when every tool call was valid and >= 1 was made.")
    evidence: float = Field(
        default=0.0,
        ge=0.0,
        description="Weight of the evidence reward (share of the script's evidence facts observed); 0 = logged only.",
    )
    turn_cost: float = Field(
        default=0.0,
        ge=0.0,
        description="Taken from the reward for every turn after the first: of rollouts equally right, the one that "
        "stopped looking sooner wins (0 = logged only).",
    )


class EvalConfig(_Section):
    """Held-out simulator evaluation at the start and the end of GRPO."""

    enabled: bool = True
    reading: bool = Field(
        default=True,
        description="Also evaluate with the teacher's looks and the policy's answers (reading apart from looking): "
        "a second pass over the held-out scripts.",
    )
    temperature: float = Field(default=0.0, description="0 = greedy, as the paper's inference.")
    device: str = Field(default="cpu", description="Where HFPolicy runs the evaluated checkpoints.")
    batch_size: int = Field(default=32, description="Episodes whose turns are generated together.")
    max_new_tokens: int = 160


class TASConfig(_Section):
    """AVATAR's Temporal Advantage Shaping (train/methods/tas.py)."""

    enabled: bool = False
    lam: float = Field(default=0.3, description="lambda_TAS: end-of-sequence weight 1 + lam (AVATAR Eq. 6).")
    variant: Literal["quadratic", "linear-decay", "linear-incline", "uniform"] = "quadratic"


class CAREConfig(_Section):
    """GRPO-CARE's consistency bonus from an EMA reference (train/methods/care.py); turns the KL term off."""

    enabled: bool = False
    decay: float = Field(default=0.995, description="EMA decay alpha (the paper's setting).")
    every: int = Field(default=10, description="Optimizer steps between EMA updates.")
    coefficient: float = Field(default=0.5, description="lambda_cons: bonus = coefficient x accuracy.")
    min_accuracy: float = Field(default=0.1, description="gamma_acc: selection needs acc >= max(group mean, this).")
    cap: float = Field(default=0.95, description="gamma_p: the answer likelihood is clipped here.")
    margin: float = Field(default=0.01, description="eps_p: consistent = clipped likelihood >= group mean - margin.")


class ReplayConfig(_Section):
    """AVATAR's off-policy stratified replay and hints (train/methods/replay.py, replay_trainer.py, hints.py)."""

    enabled: bool = False
    capacity: int = Field(default=10_000, description="Groups kept; tiers Hard/Medium/Easy hold 40/35/25 %.")
    on_policy: int = Field(default=4, description="On-policy part of the on:off group ratio (the paper: 4:4).")
    off_policy: int = Field(default=4, description="Replayed part of the on:off group ratio.")
    alpha: float = Field(default=0.6, description="Weight of the off-policy loss term (Eq. 3).")
    window: int = Field(default=20, description="On-policy groups in a prompt's moving-average reward R(q).")
    hints: Literal["none", "template", "llm"] = Field(default="none", description="Who writes hints for stuck prompts.")
    hint_url: str | None = Field(default=None, description="OpenAI-compatible base URL of the hint LLM (hints=llm).")
    hint_model: str | None = Field(default=None, description="Model name served at hint_url.")
    hint_patience: int = Field(default=3, description="Replays in the Hard tier before a hint.")
    hint_max_kl: float = Field(default=0.01, description="KL(current, behaviour) below which the policy is stuck.")


class JigsawConfig(_Section):
    """OmniJigsaw pretraining (train/methods/jigsaw.py): GRPO on clip-reordering puzzles made from the GRPO scripts,
    scored by Eq. 6 instead of correctness; held-out evaluation stays on the real task kinds."""

    enabled: bool = False
    n_clips: int = Field(default=4, description="Clips per puzzle (N).")
    trim: float = Field(default=0.1, description="Share of each clip cut from both borders.")
    mode: Literal["JMI", "SMS", "CMM"] = Field(
        default="CMM", description="Modality orchestration (CMM: the paper's best)."
    )


class MethodsConfig(_Section):
    """The companion papers' methods, each off by default (`train-sim --method tas --method care`)."""

    tas: TASConfig = Field(default_factory=TASConfig)
    care: CAREConfig = Field(default_factory=CAREConfig)
    replay: ReplayConfig = Field(default_factory=ReplayConfig)
    jigsaw: JigsawConfig = Field(default_factory=JigsawConfig)


class TrainConfig(_Section):
    """One `train-sim` run."""

    name: str = "cpu-tiny"
    seed: int = 0
    data: DataConfig = Field(default_factory=DataConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    simulator: SimulatorConfig = Field(default_factory=SimulatorConfig)
    agent: AgentConfig = Field(default_factory=AgentConfig)
    sft: SFTConfig = Field(default_factory=SFTConfig)
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    reward: RewardConfig = Field(default_factory=RewardConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    methods: MethodsConfig = Field(default_factory=MethodsConfig)

    @model_validator(mode="after")
    def _forced_search_needs_its_warm_start(self) -> TrainConfig:
        if self.grpo.trained_tokens != "all" and self.grpo.forced_search_share == 0:
            raise ValueError(
                f"grpo.trained_tokens={self.grpo.trained_tokens} needs grpo.forced_search_share > 0: the plan token "
                "is where the forced search and the scan part"
            )
        if self.grpo.stop_anchor > 0 and self.sft.teacher != "search":
            raise ValueError(
                "grpo.stop_anchor > 0 needs sft.teacher=search: the anchor is the search teacher's stop after its "
                f"looks (sft.teacher={self.sft.teacher})"
            )
        if self.grpo.stop_anchor_counts and self.grpo.stop_anchor == 0:
            raise ValueError("grpo.stop_anchor_counts needs grpo.stop_anchor > 0: the weight of their anchor")
        if self.grpo.stop_anchor_floor > 0 and not self.grpo.stop_anchor_counts:
            raise ValueError("grpo.stop_anchor_floor needs grpo.stop_anchor_counts: the stops it holds at the floor")
        check_counts("grpo.stop_anchor_counts", self.grpo.stop_anchor_counts, self.data.tasks)
        if self.grpo.forced_search_share > 0 and self.sft.teacher != "search":
            raise ValueError(
                "grpo.forced_search_share > 0 needs sft.teacher=search: a warm start that never saw the search "
                f"cannot write the rest of a forced one (sft.teacher={self.sft.teacher})"
            )
        return self

    @model_validator(mode="after")
    def _plans_differ_needs_a_reader(self) -> TrainConfig:
        if self.data.grpo_prompts == "plans_differ" and self.agent.reader in (None, "none"):
            raise ValueError("data.grpo_prompts=plans_differ needs agent.reader: the reader answers both plans")
        return self


def preset_path(preset: str) -> Path:
    """A preset name (`cpu-tiny`) or a YAML path; an unknown name fails with the available ones."""
    path = Path(preset)
    if path.suffix in (".yaml", ".yml") and path.exists():
        return path
    path = PRESETS / f"{preset}.yaml"
    if not path.exists():
        names = sorted(p.stem for p in PRESETS.glob("*.yaml"))
        raise ValueError(f"unknown preset {preset!r}: choose one of {', '.join(names)} or give a YAML path")
    return path


def load_config(preset: str = "cpu-tiny", overrides: list[str] | None = None) -> TrainConfig:
    data = yaml.safe_load(preset_path(preset).read_text()) or {}
    for override in overrides or []:
        apply_override(data, override)
    return TrainConfig.model_validate(data)


RUN_CONFIG = "config.yaml"  # what train-sim records in its run folder: the resolved settings, then `versions`


def recorded_settings(run: Path) -> dict | None:
    """The settings a train-sim run recorded (its `config.yaml` less the package versions); None where it holds none
    (nothing finished yet)."""
    path = Path(run) / RUN_CONFIG
    if not path.is_file():
        return None
    recorded = yaml.safe_load(path.read_text()) or {}
    recorded.pop("versions", None)
    return recorded


def run_config(run: Path) -> TrainConfig:
    """The config a train-sim run folder was trained under."""
    recorded = recorded_settings(run)
    if recorded is None:
        raise FileNotFoundError(f"{run} holds no {RUN_CONFIG}: is it a train-sim run folder?")
    return TrainConfig.model_validate(recorded)
