"""The trainer class for a run's methods: CVRGRPOTrainer plus the method trainers switched on in `cfg.methods`.

Each method trainer overrides `_generate_and_score_completions` and calls `super()`, so they stack by MRO: TAS
comes first in the bases so it shapes the advantages CARE recomputed (TAS -> CARE -> CVRGRPOTrainer -> GRPOTrainer).
"""

from __future__ import annotations

from train.config import MethodsConfig
from train.grpo import CVRGRPOTrainer


def trainer_class(methods: MethodsConfig) -> type[CVRGRPOTrainer]:
    from train.methods.care import CARETrainer
    from train.methods.tas import TASTrainer

    bases: list[type] = []
    attributes: dict = {}
    if methods.tas.enabled:
        bases.append(TASTrainer)
        attributes.update(tas_lambda=methods.tas.lam, tas_variant=methods.tas.variant)
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
