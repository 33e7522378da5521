"""Short names for the swappable parts behind the loop, resolved in one place.

Policies: `expert`, `scan` (the scan teacher: looks at every video whole, then answers), `random`, `gguf` (the
embedded master: scan every video, then zoom in; `gguf:<model name or .gguf path>` for another model), `gguf-free`
(the same model choosing every call itself),
`openai:<model>` (any OpenAI-compatible server, URL from --base-url or OPENAI_BASE_URL), `hf:<checkpoint dir>`.
Perceptions: `sim` (rule-based script simulator), `llm-sim` (an LLM given the interval's script slice),
`real` (decord frames + visual agent, faster-whisper); `jigsaw=True` wraps a simulator in OmniJigsaw's modality
orchestration. Training builds its simulator here too (`make_training_perception`).
Heavy modules are imported only when their component is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentcvr.interfaces import Perception, Policy
from agentcvr.script import Script

if TYPE_CHECKING:
    from train.config import TrainConfig


def _expert(arg: str, scripts: Mapping[str, Script], protocol: str = "tools", **_: Any) -> Policy:
    from agentcvr.policies.expert import ExpertPolicy

    return ExpertPolicy(scripts, protocol=protocol)  # type: ignore[arg-type]


def _scan(arg: str, scripts: Mapping[str, Script], protocol: str = "tools", **_: Any) -> Policy:
    from agentcvr.policies.scan_teacher import ScanTeacher

    return ScanTeacher(scripts, protocol=protocol)  # type: ignore[arg-type]


def _random(arg: str, scripts: Mapping[str, Script], seed: int = 0, **_: Any) -> Policy:
    from agentcvr.policies.random_policy import RandomPolicy

    return RandomPolicy(seed=seed)


def _gguf_policy(
    arg: str,
    scan: bool,
    threads: int | None = None,
    answer_orders: int | None = None,
    answer_scoring: str | None = None,
) -> Policy:
    from agentcvr.models import DEFAULT_MASTER, ensure_model
    from agentcvr.policies.gguf import GGUFPolicy

    target = arg or DEFAULT_MASTER
    path = Path(target) if target.endswith(".gguf") else ensure_model(target)
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file not found: {path}")
    answering = {"answer_orders": answer_orders, "answer_scoring": answer_scoring}
    return GGUFPolicy(path, scan=scan, threads=threads, **{k: v for k, v in answering.items() if v is not None})


def _gguf(arg: str, scripts: Mapping[str, Script], **options: Any) -> Policy:
    """Scans every video whole on its first turn, then zooms in or listens, then answers."""
    return _gguf_policy(arg, scan=True, **_answering(options))


def _gguf_free(arg: str, scripts: Mapping[str, Script], **options: Any) -> Policy:
    """Chooses every call itself (times optional): the zero-shot setting as published."""
    return _gguf_policy(arg, scan=False, **_answering(options))


def _answering(options: Mapping[str, Any]) -> dict[str, Any]:
    """The GGUF master's options among a policy's keyword options."""
    return {key: options.get(key) for key in ("threads", "answer_orders", "answer_scoring")}


def _openai(arg: str, scripts: Mapping[str, Script], base_url: str | None = None, **_: Any) -> Policy:
    from agentcvr.policies.openai_policy import OpenAIPolicy

    url = base_url or os.environ.get("OPENAI_BASE_URL")
    if not url:
        raise ValueError("policy 'openai:<model>' needs --base-url or OPENAI_BASE_URL")
    if not arg:
        raise ValueError("policy 'openai:<model>' needs a model name, e.g. openai:Qwen/Qwen3-8B")
    return OpenAIPolicy(base_url=url, model=arg)


def _hf(arg: str, scripts: Mapping[str, Script], **_: Any) -> Policy:
    from agentcvr.policies.hf_policy import HFPolicy

    if not arg or not Path(arg).is_dir():
        raise FileNotFoundError(f"policy 'hf:<dir>' needs a checkpoint directory, got {arg!r}")
    return HFPolicy(arg)


POLICIES: dict[str, Callable[..., Policy]] = {
    "expert": _expert,
    "scan": _scan,
    "random": _random,
    "gguf": _gguf,
    "gguf-free": _gguf_free,
    "openai": _openai,
    "hf": _hf,
}


def make_policy(
    spec: str, scripts: Mapping[str, Script] | None = None, reader: Path | None = None, **options: Any
) -> Policy:
    """Build a policy from `name` or `name:argument`; an unknown name fails with the valid ones. With `reader` (a
    folder written by `agentcvr train-reader`), the policy's choice-task answers come from that trained reader."""
    name, _, arg = spec.partition(":")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}: choose one of {', '.join(POLICIES)} (e.g. gguf, hf:runs/ckpt)")
    policy = POLICIES[name](arg, scripts or {}, **options)
    if reader is None:
        return policy
    from agentcvr.policies.read_answers import ReaderAnswers
    from agentcvr.reader import Reader

    return ReaderAnswers(policy, Reader.load(Path(reader), threads=options.get("threads")))


def _noise(noise: Any) -> Any:
    from simulator.noise import Noise

    return Noise(**noise) if isinstance(noise, dict) else noise


def _sim(scripts: Mapping[str, Script], noise: Any = None, **options: Any) -> Perception:
    from simulator.script_sim import ScriptSimulator

    return ScriptSimulator(scripts, noise=_noise(noise), **options)


def _llm_sim(scripts: Mapping[str, Script], noise: Any = None, **options: Any) -> Perception:
    from simulator.llm_sim import LLMSimulator

    return LLMSimulator(scripts, noise=_noise(noise), **options)


def _real(scripts: Mapping[str, Script], **options: Any) -> Perception:
    from agentcvr.perception.real import RealPerception

    return RealPerception(**options)


PERCEPTIONS: dict[str, Callable[..., Perception]] = {"sim": _sim, "llm-sim": _llm_sim, "real": _real}


def make_perception(
    name: str, scripts: Mapping[str, Script] | None = None, jigsaw: bool = False, **options: Any
) -> Perception:
    """Build a perception backend by name; an unknown name fails with the valid ones. `jigsaw` adds OmniJigsaw's
    JMI/SMS/CMM masking for jigsaw episodes (others pass through unchanged)."""
    if name not in PERCEPTIONS:
        raise ValueError(f"unknown perception {name!r}: choose one of {', '.join(PERCEPTIONS)}")
    perception = PERCEPTIONS[name](scripts or {}, **options)
    if jigsaw:
        from simulator.jigsaw_sim import OrchestratedSimulator

        return OrchestratedSimulator(perception)
    return perception


def make_training_perception(cfg: TrainConfig, scripts: Mapping[str, Script]) -> Perception:
    """The simulator a train-sim run looks through (`simulator` section): the rule or LLM simulator, with noise when
    any noise rate is set, orchestrated for jigsaw episodes when that method is on."""
    s = cfg.simulator
    noise = None
    if s.jitter_seconds or s.drop_probability or s.paraphrase_probability:
        noise = {
            "seed": cfg.seed,
            "jitter_seconds": s.jitter_seconds,
            "drop_probability": s.drop_probability,
            "paraphrase_probability": s.paraphrase_probability,
        }
    jigsaw = cfg.methods.jigsaw.enabled
    if s.kind == "llm":
        options = {"base_url": s.url, "model": s.model, "temperature": s.temperature}
        return make_perception("llm-sim", scripts, jigsaw=jigsaw, noise=noise, **options)
    return make_perception("sim", scripts, jigsaw=jigsaw, noise=noise, max_events=s.max_events)
