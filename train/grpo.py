"""TRL GRPOTrainer set-up for simulated episodes: config mapping, rewards, the agent's rollouts, callbacks.

Rollouts run the deployed LangGraph agent (`train.rollout.RolloutFunc`, TRL's `rollout_func`). `CVRGRPOTrainer`
overrides one hook, `_generate_and_score_completions`, to hand the batch's rows to the rollout function (TRL passes it
only the prompts), record the simulator's share of each generation batch and keep the last batch (tool mask
included) for inspection by tests; and `_calculate_rewards`, to log the share of groups whose rewards really differ
(`groups/with_spread`): TRL's `frac_reward_zero_std` tests a float32 std against 1e-8, so a group that all earned
0.6 (std 6e-8) counts as one with signal. With guided exploration (`grpo.forced_search_share`) it also logs the mean
reward of the forced rollouts and of the free ones (`plan/forced_reward`, `plan/free_reward`), over the batch and per
kind (`plan/MOC/forced_reward`), and the share of rollouts that wrote the plan token (`plan/reached`: with
`grpo.trained_tokens=plan` the only ones the loss trains). Rows whose advantage is zero add nothing to the gradient
when no KL term holds the policy (`grpo.beta=0`), so `_compute_loss` skips their forward and backward passes: on the
2 cores a sampled batch whose rollouts all earned the same cost a whole update (~25 minutes) for a zero gradient.
TRL pads every row of a generation batch to the batch's longest prompt and completion, and its passes run over that
width in every micro-batch; `_compute_loss` cuts each micro-batch to the columns its own rows use
(`without_padding`), which changes no loss or gradient (a causal pass never lets a real token see a later pad, and
the masks drop the pads' terms) and spares the passes over a search's length for a scan's row.
The loss reads the log-probabilities of the sampled tokens alone (decision tokens with `grpo.trained_tokens`), yet
TRL's fused head projects every completion position, tool output included, onto the vocabulary (away from Triton,
the CPU's case, it scores every position whatever the labels say); while `_compute_loss` runs,
`_get_per_token_logps_and_entropies` projects only the positions the loss reads (`scored_logps`), with the same values
there and zeros elsewhere, as TRL's head leaves its unlabelled ones.
With `grpo.stop_anchor` > 0 each step's loss also holds that weight times the mean negative log-likelihood of the
search teacher's answer after its looks (train/forced_plan.py `stop_anchors`) over the batch's episodes, each
episode's pass once a step, and logs its probability (`anchor/stop_p`, what `benchmarks/plan_odds.py` calls P(stop
after search)): the decision GRPO let fall while it raised the search (sessions 37-38). `grpo.stop_anchor_counts` adds
a few stops a step of episodes that are no prompt (`anchor/other_stop_p`), where the scan suffices and the search GRPO
rewards had spread (session 48); with `grpo.stop_anchor_floor` that term is a hinge, zero while the stop holds.
"""

from __future__ import annotations

import math
import os
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch
from trl import GRPOConfig, GRPOTrainer

from agentcvr.actions import tool_schemas
from agentcvr.episode import Episode
from agentcvr.interfaces import Limits, Perception
from train.config import TrainConfig
from train.reader import load_reader
from train.rewards import Correctness, EvidenceReward, FormatBonus, TurnCost
from train.rollout import RolloutFunc, Start

if TYPE_CHECKING:
    from datasets import Dataset

    from train.forced_plan import Anchor


class CVRGRPOTrainer(GRPOTrainer):
    """GRPOTrainer that logs simulator time per generation batch and keeps the last batch."""

    last_batch: dict[str, Any] | None = None
    batch_rows: list[dict] = []
    stop_anchors: Mapping[str, Anchor] = {}  # episode id -> the search teacher's stop after its looks
    stop_anchor_weight: float = 0.0
    other_anchors: Sequence[Anchor] = ()  # the stops of episodes that are no prompt (`grpo.stop_anchor_counts`)
    other_anchors_per_step: int = 2
    other_anchor_floor: float = 0.0  # > 0: the other stops' term is a hinge under this probability
    micro_batches_seen: int = 0  # since the last sampled batch: which of the step's anchor passes falls to which
    scored: torch.Tensor | None = None  # the positions the loss reads, while `_compute_loss` runs

    def _generate_and_score_completions(self, inputs):
        self.batch_rows = inputs  # the rollout function reads the episode ids; TRL adds the traces to these rows
        self.micro_batches_seen = 0 if self.model.training else self.micro_batches_seen
        rollouts = self.rollout_func if isinstance(self.rollout_func, RolloutFunc) else None
        before = dict(rollouts.seconds) if rollouts else {}
        tokens = dict(rollouts.tokens) if rollouts else {}
        started = time.perf_counter()
        output = super()._generate_and_score_completions(inputs)
        if rollouts is not None:  # where a sampled batch's time goes, beside the update's (step_time)
            mode = "train" if self.model.training else "eval"
            sampling = rollouts.seconds["total"] - before["total"]
            self._metrics[mode]["timing/simulator_seconds"].append(rollouts.seconds["simulator"] - before["simulator"])
            self._metrics[mode]["timing/rollout_seconds"].append(sampling)
            # the rest: TRL's log-prob passes (the sampling policy's, the reference's) and the rewards
            self._metrics[mode]["timing/scoring_seconds"].append(time.perf_counter() - started - sampling)
            context = rollouts.tokens["context"] - tokens["context"]
            if context:  # the turns' context tokens the model ran, per token asked for (padding, the prefix cache)
                self._metrics[mode]["timing/context_run"].append((rollouts.tokens["run"] - tokens["run"]) / context)
            sampled = rollouts.tokens["sampled"] - tokens["sampled"]
            if sampled:  # the rows' decoding steps run per token sampled (rows that stopped decode padding)
                decoded = rollouts.tokens["decoded"] - tokens["decoded"]
                self._metrics[mode]["timing/decode_run"].append(decoded / sampled)
        self.last_batch = output
        return output

    def _compute_loss(self, model, inputs):
        if self.beta == 0.0 and not self.aux_loss_enabled and not inputs["advantages"].any():
            # every term of the loss is this micro-batch's advantage times something: a zero gradient, without the
            # passes (the optimizer still steps, on zeros, as it would have)
            loss = sum((p * 0).sum() for p in model.parameters() if p.requires_grad)
        else:
            inputs, share = without_padding(inputs)
            self._metrics["train" if model.training else "eval"]["timing/padding_cut"].append(share)
            self.scored = loss_positions(inputs)
            try:
                loss = super()._compute_loss(model, inputs)
            finally:
                self.scored = None
        if self.stop_anchor_weight > 0 and (self.stop_anchors or self.other_anchors):
            loss = loss + self.stop_anchor_weight * self._stop_anchor_loss(model)
        return loss

    def _get_per_token_logps_and_entropies(
        self,
        model,
        input_ids,
        attention_mask,
        logits_to_keep,
        batch_size=None,
        compute_entropy=False,
        compute_aux_loss=False,
        **images,
    ):
        scored = self.scored
        if (
            scored is None
            or compute_aux_loss
            or any(value is not None for value in images.values())
            or tuple(scored.shape) != (input_ids.size(0), logits_to_keep)
            or not plain_head(model)
        ):
            return super()._get_per_token_logps_and_entropies(
                model,
                input_ids,
                attention_mask,
                logits_to_keep,
                batch_size=batch_size,
                compute_entropy=compute_entropy,
                compute_aux_loss=compute_aux_loss,
                **images,
            )
        with self.accelerator.autocast():
            logps, entropies = scored_logps(model, input_ids, attention_mask, scored, self.temperature, compute_entropy)
        return logps, entropies, None

    def _stop_anchor_loss(self, model) -> torch.Tensor:
        """This micro-batch's part of the step's anchor: the mean negative log-likelihood of the search teacher's
        answer after its looks over the batch's episodes (the whole table's when none of the batch's has one), plus
        the same mean over this step's turn of the other episodes' stops (`other_anchors`), each term at the weight.

        Each pass runs once a step, in one of its micro-batches: the parameters do not move between them, so a pass
        repeated in every micro-batch (the step's 2 prompts over 16 micro-batches: 16 passes of a 3,000-token
        conversation) adds the same gradient again. The step's sum is the mean whatever the micro-batching (TRL
        scales each micro-batch's policy loss to its share of the step, `loss_is_scaled_for_ga`)."""
        keys = [row["episode_id"] for row in self.batch_rows if row.get("episode_id") in self.stop_anchors]
        keys = sorted(set(keys)) or sorted(self.stop_anchors)
        others = self._step_other_anchors()
        passes = [(self.stop_anchors[key], len(keys), "anchor/stop_p") for key in keys]
        passes += [(anchor, len(others), "anchor/other_stop_p") for anchor in others]
        share = getattr(self, "current_gradient_accumulation_steps", self.args.gradient_accumulation_steps)
        share = share if model.training else 1
        index, self.micro_batches_seen = self.micro_batches_seen % share, self.micro_batches_seen + 1
        total = torch.zeros((), device=self.accelerator.device)
        for (context, answer), count, metric in passes[index::share]:  # the passes that fall to this micro-batch
            nll = self._stop_nll(model, context, answer, metric)
            if metric == "anchor/other_stop_p" and self.other_anchor_floor > 0:
                nll = self._below_floor(nll, model.training)
            total = total + nll / count
        return total

    def _below_floor(self, nll: torch.Tensor, training: bool) -> torch.Tensor:
        """The hinge `grpo.stop_anchor_floor` makes of an other stop's term: max(0, log floor - log p), zero (no
        gradient) while the stop holds, so GRPO's gradient alone moves the shared token there."""
        hinge = torch.clamp(nll + math.log(self.other_anchor_floor), min=0.0)
        self._metrics["train" if training else "eval"]["anchor/other_below_floor"].append(float(hinge.detach() > 0))
        return hinge

    def _step_other_anchors(self) -> list[Anchor]:
        """This step's turn of `other_anchors`: the next `other_anchors_per_step` of them, round the list."""
        count = len(self.other_anchors)
        if count == 0:
            return []
        start = self.state.global_step * self.other_anchors_per_step
        return [self.other_anchors[(start + i) % count] for i in range(min(self.other_anchors_per_step, count))]

    def _stop_nll(self, model, context: list[int], answer: int, metric: str = "anchor/stop_p") -> torch.Tensor:
        """The negative log-likelihood of the stop token after `context`, logged as its probability."""
        device = self.accelerator.device
        ids = torch.tensor([context], device=device)
        logits = model(input_ids=ids, use_cache=False, logits_to_keep=1).logits[0, -1].float()  # the last alone
        nll = torch.nn.functional.cross_entropy(logits.unsqueeze(0), torch.tensor([answer], device=device))
        self._metrics["train" if model.training else "eval"][metric].append(float(torch.exp(-nll.detach())))
        return nll

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        totals = (rewards_per_func * self.reward_weights.to(rewards_per_func.device).unsqueeze(0)).nansum(dim=1)
        mode = "train" if self.model.training else "eval"
        self._metrics[mode]["groups/with_spread"].append(groups_with_spread(totals.tolist(), self.num_generations))
        if any(row.get("forced") for row in inputs):  # guided exploration: the forced searches' reward beside the rest
            mine = totals[self.accelerator.process_index * len(inputs) :][: len(inputs)].tolist()
            for key, value in plan_rewards(mine, inputs).items():
                self._metrics[mode][key].append(value)
            reached = [bool(row.get("planned")) for row in inputs]  # the rollouts that wrote the plan token
            self._metrics[mode]["plan/reached"].append(sum(reached) / len(reached))
        return rewards_per_func


# the per-token columns of TRL's batch: cut with the completion (a per-sequence importance ratio has one column, kept)
COMPLETION_COLUMNS = (
    "completion_ids",
    "completion_mask",
    "tool_mask",
    "old_per_token_logps",
    "sampling_per_token_logps",
    "ref_per_token_logps",
    "importance_sampling_ratio",
)


def without_padding(inputs: dict[str, Any]) -> tuple[dict[str, Any], float]:
    """The micro-batch without the columns none of its rows uses: the prompts' leading pads (TRL pads prompts on
    the left) and the completions' trailing ones; and the share of the pass's columns cut. Positions are not passed
    to the model, so its rotary positions shift with the left cut by the same amount for every token: attention,
    which reads only their differences, is unchanged."""
    prompt_used, completion_used = inputs["prompt_mask"].any(dim=0), inputs["completion_mask"].any(dim=0)
    first = int(prompt_used.nonzero()[0]) if prompt_used.any() else prompt_used.numel()
    end = int(completion_used.nonzero()[-1]) + 1 if completion_used.any() else 1  # TRL reads 0 columns as all
    prompt_width, completion_width = prompt_used.numel(), completion_used.numel()
    cut = dict(inputs)
    cut["prompt_ids"], cut["prompt_mask"] = inputs["prompt_ids"][:, first:], inputs["prompt_mask"][:, first:]
    for key in COMPLETION_COLUMNS:
        value = inputs.get(key)
        if isinstance(value, torch.Tensor) and value.dim() == 2 and value.size(1) == completion_width:
            cut[key] = value[:, :end]
    width = prompt_width + completion_width
    return cut, (first + completion_width - end) / width if width else 0.0


def loss_positions(inputs: Mapping[str, Any]) -> torch.Tensor:
    """The completion positions TRL's loss reads: sampled (`completion_mask`) and not tool output (`tool_mask`, which
    with `grpo.trained_tokens` keeps the decisions alone)."""
    mask = inputs["completion_mask"]
    if inputs.get("tool_mask") is not None:
        mask = mask * inputs["tool_mask"]
    return mask.bool()


def plain_head(model) -> bool:
    """Whether the logits are the output layer's alone (no soft cap, no scale: what `scored_logps` assumes; TRL's head
    applies them for the models that have them)."""
    config = model.config.get_text_config()
    scales = ("final_logit_softcapping", "logit_scale", "output_multiplier", "lm_head_multiplier", "logits_scaling")
    return all(getattr(config, name, None) in (None, 1.0) for name in scales)


def scored_logps(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    scored: torch.Tensor,
    temperature: float,
    entropy: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probability (and entropy) of each completion token under the temperature-scaled policy, as TRL's fused
    head gives them, but the output layer runs only where `scored` (batch x completion width, the completion being
    the last columns of `input_ids`) is set; zeros elsewhere. A search's rollout is thousands of tool-output tokens
    around a few decisions: the vocabulary projection over all of them, and its backward, was about a fifth of a pass on
    the 2 cores (benchmarks/grpo_update_cost.py)."""
    causal_lm = model.get_base_model() if hasattr(model, "get_base_model") else model  # under a peft LoRA or not
    hidden = causal_lm.base_model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False)
    width = scored.size(1)
    before = hidden.last_hidden_state[:, -width - 1 : -1]  # the position before each completion token predicts it
    logits = causal_lm.get_output_embeddings()(before[scored]).float() / temperature
    log_probs = logits.log_softmax(dim=-1)
    picked = log_probs.gather(-1, input_ids[:, -width:][scored].unsqueeze(-1)).squeeze(-1)
    logps = picked.new_zeros(scored.shape).masked_scatter(scored, picked)
    if not entropy:
        return logps, None
    spread = -(log_probs.exp() * log_probs).sum(dim=-1)
    return logps, spread.new_zeros(scored.shape).masked_scatter(scored, spread)


def plan_rewards(rewards: Sequence[float], rows: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Mean reward of the forced rollouts and of the free ones, over the batch (`plan/forced_reward`) and per task kind
    (`plan/MOC/forced_reward`): a kind whose forced searches earn less than its free rollouts is not worth searching
    on yet, whatever the batch's mean says."""
    chosen: dict[str, list[float]] = defaultdict(list)
    for reward, row in zip(rewards, rows, strict=True):
        name = "forced" if row.get("forced") else "free"
        chosen[f"plan/{name}_reward"].append(reward)
        chosen[f"plan/{row['task']}/{name}_reward"].append(reward)
    return {key: sum(values) / len(values) for key, values in chosen.items()}


def groups_with_spread(rewards: Sequence[float], group_size: int, tolerance: float = 1e-6) -> float:
    """The share of consecutive groups of `group_size` rewards whose range exceeds `tolerance`: the groups that give
    GRPO an advantage at all (float noise in a constant group is not one)."""
    groups = [rewards[k : k + group_size] for k in range(0, len(rewards), group_size)]
    return sum(max(group) - min(group) > tolerance for group in groups) / len(groups)


def grpo_args(
    cfg: TrainConfig, output_dir: Path, logging_dir: Path, reward_weights: Sequence[float] | None = None
) -> GRPOConfig:
    """TRL's settings from the config; `reward_weights` pair with the trainer's reward functions (`weighted_rewards`),
    None weighing each 1."""
    g = cfg.grpo
    # transformers 5 reads the TensorBoard folder from the environment (TrainingArguments lost `logging_dir`).
    os.environ["TENSORBOARD_LOGGING_DIR"] = str(logging_dir)
    # TRL loads the policy given as a path (and the KL reference model) with these; without them it loads float32 and
    # its default attention, whatever model.dtype and model.attn_implementation say.
    model_init = {"dtype": cfg.model.dtype}
    if cfg.model.attn_implementation:
        model_init["attn_implementation"] = cfg.model.attn_implementation
    return GRPOConfig(
        output_dir=str(output_dir),
        model_init_kwargs=model_init,
        seed=cfg.seed,
        use_cpu=g.use_cpu,
        bf16=g.bf16,
        per_device_train_batch_size=g.rollouts_per_step // g.gradient_accumulation_steps,  # one micro-batch
        gradient_accumulation_steps=g.gradient_accumulation_steps,
        steps_per_generation=g.steps_per_generation,
        num_train_epochs=g.num_train_epochs,
        num_generations=g.num_generations,
        learning_rate=g.learning_rate,
        lr_scheduler_type=g.lr_scheduler_type,
        warmup_steps=g.warmup_steps,
        max_grad_norm=g.max_grad_norm,
        beta=0.0 if cfg.methods.care.enabled else g.beta,  # CARE's bonus replaces the KL term
        epsilon=g.epsilon,
        loss_type=g.loss_type,
        scale_rewards=g.scale_rewards,
        num_iterations=g.num_iterations,
        temperature=g.temperature,
        top_p=g.top_p,
        top_k=g.top_k,
        max_completion_length=g.max_completion_length,
        max_steps=g.max_steps,
        save_strategy="steps",
        save_steps=g.save_steps,
        save_total_limit=g.save_total_limit,
        logging_steps=g.logging_steps,
        report_to=g.report_to,
        disable_tqdm=True,  # our rich bar instead
        use_vllm=g.use_vllm,
        # forced tokens were drawn with probability 1: weighting them by the policy's own would undo the forcing
        vllm_importance_sampling_correction=g.forced_search_share == 0,
        vllm_mode=g.vllm_mode,
        vllm_server_base_url=g.vllm_server_base_url,
        vllm_gpu_memory_utilization=g.vllm_gpu_memory_utilization,
        gradient_checkpointing=g.gradient_checkpointing,
        deepspeed=g.deepspeed,
        reward_weights=list(reward_weights) if reward_weights is not None else None,
        log_completions=False,
        shuffle_dataset=True,
        dataloader_num_workers=0,
    )


def weighted_rewards(
    cfg: TrainConfig, evidence: Mapping[str, Sequence[str]], extra_rewards: Sequence = ()
) -> list[tuple[Any, float]]:
    """Each reward function with its weight in the total the advantages come from: correctness (OmniJigsaw's Eq. 6
    in its place when on), the format bonus and the turn cost at 1 (their sizes live in FormatBonus and TurnCost),
    the evidence at `reward.evidence` (logged even at 0), and the extras at 1."""
    if cfg.methods.jigsaw.enabled:
        from train.methods.jigsaw import JigsawReward

        first = JigsawReward()
    else:
        first = Correctness(dense=cfg.reward.dense)
    return [
        (first, 1.0),
        (FormatBonus(cfg.reward.format_bonus), 1.0),
        (EvidenceReward(evidence), cfg.reward.evidence),
        (TurnCost(cfg.reward.turn_cost), 1.0),
        *((extra, 1.0) for extra in extra_rewards),
    ]


def build_trainer(
    cfg: TrainConfig,
    model: str | Any,
    tokenizer,
    dataset: Dataset,
    episodes: Mapping[str, Episode],
    perception: Perception,
    output_dir: Path,
    logging_dir: Path,
    callbacks: Sequence = (),
    extra_rewards: Sequence = (),
    evidence: Mapping[str, Sequence[str]] | None = None,
    starts: Mapping[str, Start] | None = None,
    anchors: Mapping[str, Anchor] | None = None,
    other_anchors: Sequence[Anchor] = (),
) -> CVRGRPOTrainer:
    """The trainer over `dataset` rows (`prompt`, `episode_id`, `task`); `model` is a path (the reference model is
    loaded from it when beta > 0) or a model object. `evidence` maps episode ids to the facts the evidence reward
    looks for (`reward.evidence` weighs it); `starts` maps episode ids to the search's start that
    `grpo.forced_search_share` of their rollouts are given, `anchors` to the stop `grpo.stop_anchor` trains
    (train/forced_plan.py); `other_anchors` are the stops of episodes that are no prompt, a few a step.
    `extra_rewards` (weight 1 each) are for experiments and tests. The class adds the methods switched on in
    `cfg.methods` (train/methods/select.py)."""
    from train.methods.select import trainer_class

    limits = Limits(max_turns=cfg.agent.max_turns, max_observation_chars=cfg.agent.max_observation_chars)
    rollouts = RolloutFunc(
        episodes,
        perception,
        limits,
        cfg.agent.protocol,
        tool_schemas(),
        max_new_tokens=cfg.agent.max_turn_tokens,
        reader=load_reader(cfg.agent.reader),
        starts=starts,
        forced_share=cfg.grpo.forced_search_share,
        trained_tokens=cfg.grpo.trained_tokens,
        prefix_cache=cfg.grpo.prefix_cache,
    )
    rewards = weighted_rewards(cfg, evidence or {}, extra_rewards)
    trainer = trainer_class(cfg.methods)(
        model=model,
        processing_class=tokenizer,
        reward_funcs=[func for func, _ in rewards],
        args=grpo_args(cfg, output_dir, logging_dir, [weight for _, weight in rewards]),
        train_dataset=dataset,
        rollout_func=rollouts,
        callbacks=list(callbacks),
    )
    if cfg.methods.replay.enabled:
        trainer.episodes = episodes  # the hint maker reads questions from here
    trainer.stop_anchors, trainer.stop_anchor_weight = dict(anchors or {}), cfg.grpo.stop_anchor
    trainer.other_anchors, trainer.other_anchors_per_step = list(other_anchors), cfg.grpo.stop_anchor_per_step
    trainer.other_anchor_floor = cfg.grpo.stop_anchor_floor
    return trainer
