"""`key=value` overrides of nested settings, the value parsed as YAML (`3`, `1e-5`, `[NC,CC]`, `false`, `null`):
`train-sim -o grpo.max_steps=20` on a preset, `run -o perception.describer.ocr=false` on a component's options.

    data = {"policy": {}, "perception": {"visual": "vlm"}}
    apply_override(data, "perception.vlm.max_tokens=256")   # {"perception": {"visual": "vlm", "vlm": {...}}}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import yaml

COMPONENTS = ("policy", "perception")


def apply_override(data: dict[str, Any], override: str) -> None:
    """Set `a.b.c=value` in a nested dict; the value is parsed as YAML (`3`, `1e-5`, `[NC,CC]`, `null`)."""
    if "=" not in override:
        raise ValueError(f"override {override!r} must look like key=value, e.g. grpo.max_steps=20")
    key, raw = override.split("=", 1)
    parts = key.strip().split(".")
    node = data
    for part in parts[:-1]:
        node = node.setdefault(part, {})
        if not isinstance(node, dict):
            raise ValueError(f"override {override!r}: {part!r} is not a section")
    node[parts[-1]] = yaml.safe_load(raw)


def component_options(
    policy: dict[str, Any], perception: dict[str, Any], overrides: Iterable[str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The policy's and the perception's options with `policy.KEY=VALUE` / `perception.KEY=VALUE` overrides applied
    (dotted keys reach nested options); the components' builders refuse what they do not take."""
    data: dict[str, Any] = {"policy": dict(policy), "perception": dict(perception)}
    for override in overrides:
        section = override.split("=", 1)[0].split(".", 1)[0].strip()
        if section not in COMPONENTS or "." not in override.split("=", 1)[0]:
            raise ValueError(
                f"option {override!r} must name its part: policy.KEY=VALUE or perception.KEY=VALUE "
                "(e.g. perception.describer.ocr=false)"
            )
        apply_override(data, override)
    return data["policy"], data["perception"]
