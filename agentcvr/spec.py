"""The run specification: everything that decides what a run computes, with a stable hash.

A run's answers depend on the policy and its options, the perception and its options (the simulator, or real
perception with its VLM), and the limits. Every record a run writes carries its `RunSpec`; resuming into a file
written under another spec would mix two runs in one table, so it is refused, naming what differs:

    spec = RunSpec(policy=Component(name="expert"), perception=Component(name="sim"), limits=Limits())
    check_resume(Path("runs/expert.jsonl"), spec, [record.spec for record in records])   # raises SpecMismatch

Options that change how fast or where a run goes, never what it answers (timeouts, workers, caches, server URLs,
keys), are left out by the builder (`agentcvr.components.recorded`), so a resumed run may change them. Other kinds
of run describe themselves with their own `Spec` (a reader fit's folder: `train.reader.ReaderSpec`) and resume by
the same `check_resume`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agentcvr.interfaces import Limits


class Component(BaseModel):
    """One swappable part by its short name (`gguf:qwen2.5-coder-1.5b`, `sim`, `real`) and the options it was built
    with (defaults left out, so an explicit default and no option are the same spec)."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    options: dict[str, Any] = Field(default_factory=dict)


class Spec(BaseModel):
    """Settings that decide what a run computes, hashed and compared field by field: every kind of run (items on the
    engine, a reader fit) records one and resumes only under the same (`check_resume`)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    def canonical(self) -> str:
        """Sorted-key compact JSON: the same settings always give the same text."""
        return json.dumps(self.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))

    @property
    def digest(self) -> str:
        """The first 16 hex digits of the canonical JSON's sha256."""
        return hashlib.sha256(self.canonical().encode()).hexdigest()[:16]

    def differences(self, other: Spec) -> list[str]:
        """`field: this != other` for every dotted field whose value differs."""
        return differences(self.model_dump(mode="json"), other.model_dump(mode="json"))


class RunSpec(Spec):
    """What a run computes with. `perception` and `limits` are None for a predictor that has neither (CrossVid's
    single-pass VLM, which is the `policy` there); `reference` is the perception a comparison runs the same policy
    through beside `perception` (`eval fidelity`: the simulator beside real perception)."""

    policy: Component
    perception: Component | None = None
    limits: Limits | None = None
    reference: Component | None = None


class SpecMismatch(ValueError):
    """An output file holds records of another run specification (or of none)."""


def check_resume(path: Path, spec: Spec, written: Iterable[Spec | None]) -> None:
    """Refuse to add to `path` unless every record already there was written under `spec`."""
    unrecorded = 0
    for other in written:
        if other is None:
            unrecorded += 1
        elif other.digest != spec.digest:
            differs = "; ".join(spec.differences(other))
            raise SpecMismatch(
                f"{path} was written under another run spec ({other.digest}, this run: {spec.digest}); it differs in "
                f"{differs} (this run's value first). Use another --out, or the same settings to resume."
            )
    if unrecorded:
        raise SpecMismatch(
            f"{path} holds {unrecorded} record(s) without a run spec (written before specs were recorded): their "
            "settings are unknown, so this run cannot resume it. Use another --out."
        )


def differences(
    mine: Mapping[str, Any], theirs: Mapping[str, Any], ignored: Callable[[str], bool] = lambda key: False
) -> list[str]:
    """`key: mine != theirs` for every dotted key of two nested settings whose values differ, but the `ignored`."""
    ours, other = flatten(mine), flatten(theirs)
    missing = object()
    return [
        f"{key}: {_show(ours.get(key, missing))} != {_show(other.get(key, missing))}"
        for key in sorted(ours.keys() | other.keys())
        if not ignored(key) and ours.get(key, missing) != other.get(key, missing)
    ]


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested settings as one level of dotted keys (`grpo.beta`)."""
    if isinstance(value, dict):
        flat: dict[str, Any] = {}
        for key, inner in value.items():
            flat |= flatten(inner, f"{prefix}.{key}" if prefix else key)
        return flat
    return {prefix: value}


def _show(value: Any) -> str:
    return "(unset)" if not isinstance(value, str | int | float | bool | list | type(None)) else json.dumps(value)
