"""The trainer class for a run's methods: CVRGRPOTrainer plus the method trainers switched on in `cfg.methods`.

Each method trainer overrides `_generate_and_score_completions` and calls `super()`, so they stack by MRO: TAS comes
first so it shapes the final advantages, replay appends its groups to what CARE scored
(TAS -> Replay -> CARE -> CVRGRPOTrainer -> GRPOTrainer). Replayed groups keep their stored (pre-bonus) rewards.
"""

from __future__ import annotations

from train.config import MethodsConfig
from train.grpo import CVRGRPOTrainer


def trainer_class(methods: MethodsConfig) -> type[CVRGRPOTrainer]:
    from train.methods.care import CARETrainer
    from train.methods.replay_trainer import ReplayTrainer
    from train.methods.tas import TASTrainer

    bases: list[type] = []
    attributes: dict = {}
    if methods.tas.enabled:
        bases.append(TASTrainer)
        attributes.update(tas_lambda=methods.tas.lam, tas_variant=methods.tas.variant)
    if methods.replay.enabled:
        bases.append(ReplayTrainer)
        r = methods.replay
        attributes.update(
            replay_capacity=r.capacity,
            replay_ratio=(r.on_policy, r.off_policy),
            replay_alpha=r.alpha,
            replay_window=r.window,
            hint_maker=hint_maker(methods),
            hint_patience=r.hint_patience,
            hint_max_kl=r.hint_max_kl,
        )
    if methods.care.enabled:
        bases.append(CARETrainer)
        care = methods.care
        attributes.update(
            care_decay=care.decay,
            care_every=care.every,
            care_coefficient=care.coefficient,
            care_min_accuracy=care.min_accuracy,
            care_cap=care.cap,
            care_margin=care.margin,
        )
    if not bases:
        return CVRGRPOTrainer
    name = "".join(base.__name__.removesuffix("Trainer") for base in bases) + "Trainer"
    return type(name, tuple(bases), attributes)


def hint_maker(methods: MethodsConfig):
    from train.methods.hints import LLMHints, TemplateHints

    r = methods.replay
    if r.hints == "template":
        return TemplateHints()
    if r.hints == "llm":
        if not (r.hint_url and r.hint_model):
            raise ValueError("methods.replay.hints=llm needs methods.replay.hint_url and methods.replay.hint_model")
        return LLMHints(r.hint_url, r.hint_model)
    return None
