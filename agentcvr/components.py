"""Short names for the swappable parts behind the loop, resolved in one place.

Policies: `expert`, `scan` (the scan teacher: looks at every video whole, then answers), `random`, `gguf` (the
embedded master: on the choice tasks the scan's looks and the shipped reader's answer, on FSA and CCQA the scan's
looks and an answer matched from the observed sentences, on PSS the model scans every video, zooms in and answers;
`reader=none` for the model alone; `gguf:<model name or .gguf path>` for another
model), `gguf-free` (the model alone, choosing every call itself: the published zero-shot setting),
`openai:<model>` (any OpenAI-compatible server, URL from --base-url or OPENAI_BASE_URL), `hf:<checkpoint dir>`,
`trained` (`trained:<shipped name or checkpoint dir>`: a master trained here, `looker-v8` by default, that makes
every call itself; the shipped reader answers what it can from those looks).
Perceptions: `sim` (rule-based script simulator), `llm-sim` (an LLM given the interval's script slice),
`real` (decord frames + visual agent, faster-whisper); `jigsaw=True` wraps any of them in OmniJigsaw's modality
orchestration. Training builds its simulator here too (`make_training_perception`).

Every policy also takes `reader` (a shipped reader's name, a folder from `agentcvr train-reader`, or none) and
`reader_looks`: the built policy is then wrapped so that the trained option reader answers its choice tasks
(`agentcvr/policies/read_answers.py`), after the master's looks or the scan's.

Each name owns a pydantic options model that forbids unknown fields, at any depth (`vlm.modle`, `describer.ocrr`),
so a misspelled option fails naming itself and the valid ones; an option given as None counts as not given.
`policy_component` / `perception_component` resolve a name and options into the `agentcvr.spec.Component` a run
records (defaults left out, but for options marked `Recorded`: the reader and who looks for it); `make_policy` /
`make_perception` build from it.
Heavy modules are imported only when their component is asked for.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from agentcvr.actions import DEFAULT_FRAMES, MAX_FRAMES
from agentcvr.interfaces import Perception, Policy
from agentcvr.script import Script
from agentcvr.spec import Component

if TYPE_CHECKING:
    from train.config import TrainConfig

# Options that change how fast or where a part runs (a server's URL: the model's name says what runs there), never
# what it answers: left out of the recorded spec, so a resumed run may change them. `api_key` is a secret.
OPERATIONAL = frozenset(
    {
        "api_key",
        "base_url",
        "threads",
        "prompt_batch",
        "timeout",
        "max_retries",
        "observe_timeout",
        "listen_timeout",
        "ocr_timeout",
        "workers",
        "visual_workers",
        "audio_workers",
        "ocr_workers",
        "cpu_threads",
        "frame_cache_mb",
        "frame_cache_dir",
        "cache_size",
        "cache_path",
        "device",
    }
)


class Options(BaseModel):
    """A component's options; unknown names are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True)


@dataclass(frozen=True)
class Recorded:
    """Marks an option (`Annotated[type, Recorded()]`) that the run spec records even at its default, where the
    default alone would let a run resume across a change of it (`gguf`'s default reader came with issue 20: a run
    resumed across that change must be refused, not mixed). `while_on`: only while that option is on (given, and not
    "none"). An option at None is not given, and not recorded."""

    while_on: str | None = None


DEFAULT_READER = "scan-v2"  # the lexical reader (docs/reader.md); scan-v1 still ships, one option away
READER_HELP = (
    f"The option reader that answers the choice tasks: a shipped one by name ({DEFAULT_READER}, scan-v1, "
    "scan-evidence-v1), a folder from `agentcvr train-reader`, or none (the master answers)."
)
READER_LOOKS_HELP = (
    "Who looks on a choice task when a reader answers: the master; the scan (every video observed whole, movie "
    "videos listened to) after which the reader answers without asking the master; or search (the scan, then a "
    "second look chosen from what it showed: PEA's steps zoomed on, NC's and CCQA's videos in windows, MSR's asked "
    "view at the moment the other view shows; the embedded master's default)."
)

SCAN_FRAMES_HELP = (
    "Frames each of the scan's whole-video looks asks for (reader_looks scan or search): a look sees only what is on "
    "screen at its frames, so at 16 a step shorter than a video's 16th can fall between them (128: the cap)."
)


class PolicyOptions(Options):
    """What every policy takes. Which reader answers, and who looks for it, are recorded at their defaults too (a
    policy kind that changes their defaults keeps the marks)."""

    reader: Annotated[str | None, Recorded()] = Field(default=None, description=READER_HELP)
    reader_looks: Annotated[Literal["master", "scan", "search"], Recorded(while_on="reader")] = Field(
        default="master", description=READER_LOOKS_HELP
    )
    scan_frames: Annotated[int, Recorded(while_on="reader")] = Field(
        default=DEFAULT_FRAMES, ge=1, le=MAX_FRAMES, description=SCAN_FRAMES_HELP
    )


class TeacherOptions(PolicyOptions):
    protocol: Literal["tools", "json"] = Field(default="tools", description="The action format it writes.")


class ScanOptions(TeacherOptions):
    windows: int = Field(
        default=1, ge=1, le=12, description="Windows each video's first look is cut into (1: the video whole)."
    )


class SearchOptions(ScanOptions):
    share: float = Field(
        default=1.0,
        ge=0.0,
        le=1.0,
        description="Share of episodes (the same ones every run, by their id) whose scan is followed by the search's "
        "turn; the rest answer after the scan. Below 1 a warm start imitating it samples both plans.",
    )


class RandomOptions(PolicyOptions):
    seed: int = Field(default=0, description="The same seed gives the same traces.")


class GGUFOptions(PolicyOptions):
    """The embedded master: by default the shipped reader answers its choice tasks (and matches FSA, CCQA and MSR's
    places) after the scan and the search's second look, and the model looks and answers PSS (docs/reader.md);
    `reader=none` is the zero-shot model alone, `reader_looks=scan` the scan without the second look."""

    reader: str | None = Field(default=DEFAULT_READER, description=READER_HELP)
    reader_looks: Literal["master", "scan", "search"] = Field(default="search", description=READER_LOOKS_HELP)
    scan_frames: int = Field(default=MAX_FRAMES, ge=1, le=MAX_FRAMES, description=SCAN_FRAMES_HELP)  # seen on footage
    threads: int | None = Field(default=None, ge=1, description="llama.cpp threads (default: its own choice).")
    prompt_batch: int | None = Field(
        default=None,
        ge=1,
        description="Prompt tokens read per llama.cpp step (default 32, gguf.PROMPT_BATCH): a stop waits for one.",
    )
    answer_orders: int | None = Field(default=None, ge=1, description="Ask the options in this many orders, vote.")
    answer_scoring: str | None = Field(default=None, description="letter, vote, cloze or verify.")


class GGUFFreeOptions(GGUFOptions):
    """The published zero-shot setting: the model chooses every call and answers everything itself."""

    reader: str | None = Field(default=None, description=READER_HELP)
    reader_looks: Literal["master", "scan", "search"] = Field(default="master", description=READER_LOOKS_HELP)
    scan_frames: int = Field(default=DEFAULT_FRAMES, ge=1, le=MAX_FRAMES, description=SCAN_FRAMES_HELP)


class TrainedOptions(PolicyOptions):
    """A master trained here (`trained:NAME`, a shipped name or a train-sim checkpoint folder): it makes every call
    itself, and the shipped reader answers its choice tasks from what it looked at."""

    reader: str | None = Field(default=DEFAULT_READER, description=READER_HELP)
    temperature: float = Field(default=0.0, ge=0, description="Sampling temperature (0: greedy, as trained to act).")
    threads: int | None = Field(
        default=None, ge=1, description="llama.cpp threads of a LoRA master (default: all cores, max 8)."
    )
    weights: Annotated[Literal["merged", "lora"], Recorded()] = Field(  # a change of default must not mix runs
        default="merged",
        description="A LoRA master's weights in llama.cpp: merged (its adapter merged into a Q8_0 copy of the base, "
        "built once, ~1.9x faster prompts) or lora (the registry base with the adapter applied per layer).",
    )


class OpenAIOptions(PolicyOptions):
    base_url: str | None = Field(default=None, description="OpenAI-compatible URL (default: OPENAI_BASE_URL).")


class HFOptions(PolicyOptions):
    pass


class NoiseOptions(Options):
    seed: int = 0
    jitter_seconds: float = Field(default=0.0, ge=0)
    drop_probability: float = Field(default=0.0, ge=0, le=1)
    paraphrase_probability: float = Field(default=0.0, ge=0, le=1)
    describer_probability: float = Field(default=0.0, ge=0, le=1)


SAMPLING_HELP = (
    "What a look sees: frames (only the events on screen at one of the call's num_frames frames, as the real visual "
    "agent) or events (every event overlapping the interval, the simulator's first, generous model)."
)


class SimOptions(Options):
    jigsaw: bool = Field(default=False, description="OmniJigsaw's JMI/SMS/CMM masking for jigsaw episodes.")
    max_events: int = Field(default=8, ge=1, description="Events reported per call at most.")
    sampling: Annotated[Literal["events", "frames"], Recorded()] = Field(default="frames", description=SAMPLING_HELP)
    noise: NoiseOptions | None = None


class LLMSimOptions(Options):
    jigsaw: bool = False
    base_url: str | None = None
    model: str | None = None
    api_key: str = "EMPTY"
    temperature: float = 0.1
    max_tokens: int = 256
    cache_path: str | None = None
    max_events: int = 12
    max_sentences: int = 6
    noise: NoiseOptions | None = None


@dataclass(frozen=True)
class Kind:
    """A component name: its options model (or a function that imports it: real perception's is heavy) and how to
    build it from validated options."""

    options: type[BaseModel] | Callable[[], type[BaseModel]]
    build: Callable[..., Any]

    def model(self) -> type[BaseModel]:
        return self.options if isinstance(self.options, type) else self.options()


def _expert(arg: str, scripts: Mapping[str, Script], options: TeacherOptions) -> Policy:
    from agentcvr.policies.expert import ExpertPolicy

    return ExpertPolicy(scripts, protocol=options.protocol)


def _scan(arg: str, scripts: Mapping[str, Script], options: ScanOptions) -> Policy:
    from agentcvr.policies.scan_teacher import ScanTeacher

    return ScanTeacher(scripts, protocol=options.protocol, windows=options.windows, frames=options.scan_frames)


def _search(arg: str, scripts: Mapping[str, Script], options: SearchOptions) -> Policy:
    from agentcvr.policies.search import scan_then_search

    return scan_then_search(scripts, options.protocol, options.windows, options.scan_frames, options.share)


def _random(arg: str, scripts: Mapping[str, Script], options: RandomOptions) -> Policy:
    from agentcvr.policies.random_policy import RandomPolicy

    return RandomPolicy(seed=options.seed)


def _gguf_policy(arg: str, scan: bool, options: GGUFOptions) -> Policy:
    from agentcvr.models import DEFAULT_MASTER, ensure_model
    from agentcvr.policies.gguf import GGUFPolicy

    target = arg or DEFAULT_MASTER
    path = Path(target) if target.endswith(".gguf") else ensure_model(target)
    if not path.is_file():
        raise FileNotFoundError(f"GGUF file not found: {path}")
    given = {
        "answer_orders": options.answer_orders,
        "answer_scoring": options.answer_scoring,
        "prompt_batch": options.prompt_batch,
    }
    return GGUFPolicy(path, scan=scan, threads=options.threads, **{k: v for k, v in given.items() if v is not None})


def _gguf(arg: str, scripts: Mapping[str, Script], options: GGUFOptions) -> Policy:
    """Scans every video whole on its first turn, then zooms in or listens, then answers."""
    return _gguf_policy(arg, scan=True, options=options)


def _gguf_free(arg: str, scripts: Mapping[str, Script], options: GGUFOptions) -> Policy:
    """Chooses every call itself (times optional): the zero-shot setting as published."""
    return _gguf_policy(arg, scan=False, options=options)


def _openai(arg: str, scripts: Mapping[str, Script], options: OpenAIOptions) -> Policy:
    from agentcvr.policies.openai_policy import OpenAIPolicy

    if not options.base_url:
        raise ValueError("policy 'openai:<model>' needs --base-url or OPENAI_BASE_URL")
    if not arg:
        raise ValueError("policy 'openai:<model>' needs a model name, e.g. openai:Qwen/Qwen3-8B")
    return OpenAIPolicy(base_url=options.base_url, model=arg)


def _hf(arg: str, scripts: Mapping[str, Script], options: HFOptions) -> Policy:
    from agentcvr.policies.hf_policy import HFPolicy

    if not arg or not Path(arg).is_dir():
        raise FileNotFoundError(f"policy 'hf:<dir>' needs a checkpoint directory, got {arg!r}")
    return HFPolicy(arg)


def _trained(arg: str, scripts: Mapping[str, Script], options: TrainedOptions) -> Policy:
    from agentcvr.masters import DEFAULT_TRAINED, LORA_ADAPTER, master_folder

    folder = master_folder(arg or DEFAULT_TRAINED)
    if (folder / LORA_ADAPTER).is_file():  # a LoRA master: llama.cpp over its registry base
        from agentcvr.policies.trained_gguf import TrainedGGUFPolicy

        return TrainedGGUFPolicy(
            folder, temperature=options.temperature, threads=options.threads, weights=options.weights
        )
    if options.threads is not None:
        raise ValueError(f"trained:{arg}: threads sets llama.cpp's threads; this master runs in torch ({folder})")
    if options.weights != "merged":
        raise ValueError(f"trained:{arg}: weights chooses a LoRA master's llama.cpp weights; this one runs in torch")
    from agentcvr.policies.hf_policy import HFPolicy

    return HFPolicy(folder, temperature=options.temperature)


# The master of `run`, `ask`, `serve` and `eval crossvid` when none is named.
DEFAULT_POLICY = "gguf"

# Policies that hold one model in this process, which answers one request at a time: a run gives them one thread.
SINGLE_SLOT = frozenset({"gguf", "gguf-free", "hf", "trained"})

POLICIES: dict[str, Kind] = {
    "expert": Kind(TeacherOptions, _expert),
    "scan": Kind(ScanOptions, _scan),
    "search": Kind(SearchOptions, _search),
    "random": Kind(RandomOptions, _random),
    "gguf": Kind(GGUFOptions, _gguf),
    "gguf-free": Kind(GGUFFreeOptions, _gguf_free),
    "openai": Kind(OpenAIOptions, _openai),
    "hf": Kind(HFOptions, _hf),
    "trained": Kind(TrainedOptions, _trained),
}


def _noise(noise: NoiseOptions | None) -> Any:
    from simulator.noise import Noise

    return Noise(**noise.model_dump()) if noise is not None else None


def _sim(scripts: Mapping[str, Script], options: SimOptions) -> Perception:
    from simulator.script_sim import ScriptSimulator

    return ScriptSimulator(
        scripts, max_events=options.max_events, noise=_noise(options.noise), sampling=options.sampling
    )


def _llm_sim(scripts: Mapping[str, Script], options: LLMSimOptions) -> Perception:
    from simulator.llm_sim import LLMSimulator

    given = options.model_dump(exclude={"jigsaw", "noise"})
    return LLMSimulator(scripts, noise=_noise(options.noise), **given)


def _real_options() -> type[BaseModel]:
    """`RealPerceptionConfig` with unknown fields refused, plus the jigsaw switch every perception takes."""
    from agentcvr.perception.real import RealPerceptionConfig

    class RealOptions(RealPerceptionConfig):
        model_config = ConfigDict(extra="forbid", frozen=True)
        jigsaw: bool = False

    return RealOptions


def _real(scripts: Mapping[str, Script], options: Any) -> Perception:
    from agentcvr.perception.real import RealPerception, RealPerceptionConfig

    config = RealPerceptionConfig.model_validate(options.model_dump(exclude={"jigsaw"}))
    return RealPerception(config)


PERCEPTIONS: dict[str, Kind] = {
    "sim": Kind(SimOptions, _sim),
    "llm-sim": Kind(LLMSimOptions, _llm_sim),
    "real": Kind(_real_options, _real),
}


def policy_component(spec: str, **options: Any) -> Component:
    """Resolve `name` or `name:argument` and its options; an unknown name or option fails naming the valid ones."""
    name, _, arg = spec.partition(":")
    if name not in POLICIES:
        raise ValueError(f"unknown policy {name!r}: choose one of {', '.join(POLICIES)} (e.g. gguf, hf:runs/ckpt)")
    if name == "openai" and options.get("base_url") is None and os.environ.get("OPENAI_BASE_URL"):
        options = {**options, "base_url": os.environ["OPENAI_BASE_URL"]}  # recorded: the URL actually asked
    return Component(name=spec, options=_checked("policy", spec, POLICIES[name].model(), options))


def perception_component(name: str, **options: Any) -> Component:
    """Resolve a perception name and its options; an unknown name or option fails naming the valid ones."""
    if name not in PERCEPTIONS:
        raise ValueError(f"unknown perception {name!r}: choose one of {', '.join(PERCEPTIONS)}")
    return Component(name=name, options=_checked("perception", name, PERCEPTIONS[name].model(), options))


def make_policy(spec: str | Component, scripts: Mapping[str, Script] | None = None, **options: Any) -> Policy:
    """Build a policy from `name`, `name:argument` (with options) or a resolved `Component`."""
    component = spec if isinstance(spec, Component) else policy_component(spec, **options)
    name, _, arg = component.name.partition(":")
    kind = POLICIES[name]
    options_ = kind.model().model_validate(component.options)
    policy = kind.build(arg, scripts or {}, options_)
    if options_.reader in (None, "none"):
        return policy
    from agentcvr.policies.read_answers import ReaderAnswers
    from agentcvr.reader import Reader

    return ReaderAnswers(
        policy, Reader.load(options_.reader), who_looks=options_.reader_looks, scan_frames=options_.scan_frames
    )


def make_perception(
    name: str | Component, scripts: Mapping[str, Script] | None = None, jigsaw: bool = False, **options: Any
) -> Perception:
    """Build a perception backend by name (with options) or from a resolved `Component`. `jigsaw` adds OmniJigsaw's
    JMI/SMS/CMM masking for jigsaw episodes (others pass through unchanged)."""
    if isinstance(name, Component):
        component = name
    else:
        component = perception_component(name, **({"jigsaw": True} if jigsaw else {}), **options)
    kind = PERCEPTIONS[component.name]
    resolved = kind.model().model_validate(component.options)
    perception = kind.build(scripts or {}, resolved)
    if resolved.jigsaw:  # type: ignore[attr-defined]
        from simulator.jigsaw_sim import OrchestratedSimulator

        return OrchestratedSimulator(perception)
    return perception


def recorded(component: Component) -> Component:
    """The component as a run spec records it: operational options (timeouts, workers, caches, keys) left out; a
    trained master with the digest of what it loads, so a run resumed after `trained` or a checkpoint folder changed
    (a new default, a retrained warm start) is refused instead of mixing two masters' results."""
    options = _without(component.options, OPERATIONAL)
    name, _, arg = component.name.partition(":")
    if name == "trained":
        from agentcvr.masters import DEFAULT_TRAINED, master_digest

        options["master_sha256"] = master_digest(arg or DEFAULT_TRAINED)
    return component.model_copy(update={"options": options})


def make_training_perception(cfg: TrainConfig, scripts: Mapping[str, Script]) -> Perception:
    """The simulator a train-sim run looks through (`simulator` section): the rule or LLM simulator, with noise when
    any noise rate is set, orchestrated for jigsaw episodes when that method is on."""
    s = cfg.simulator
    noise = None
    if s.jitter_seconds or s.drop_probability or s.paraphrase_probability or s.describer_probability:
        noise = {
            "seed": cfg.seed,
            "jitter_seconds": s.jitter_seconds,
            "drop_probability": s.drop_probability,
            "paraphrase_probability": s.paraphrase_probability,
            "describer_probability": s.describer_probability,
        }
    jigsaw = cfg.methods.jigsaw.enabled
    if s.kind == "llm":
        options = {"base_url": s.url, "model": s.model, "temperature": s.temperature}
        return make_perception("llm-sim", scripts, jigsaw=jigsaw, noise=noise, **options)
    return make_perception("sim", scripts, jigsaw=jigsaw, noise=noise, max_events=s.max_events, sampling=s.sampling)


def _checked(role: str, name: str, model: type[BaseModel], options: Mapping[str, Any]) -> dict[str, Any]:
    """Validated options, defaults left out (None means not given) except those marked `Recorded`. An unknown
    option, at the top or inside a nested one (`vlm`, `describer`, `audio`, `noise`), fails naming itself and the
    valid ones there."""
    given = {key: value for key, value in options.items() if value is not None}
    unknown = _unknown(model, given)
    if unknown:
        keys = ", ".join(key for key, _ in unknown)
        known = "; ".join(
            f"{'its options' if not where else f'options of {where}'}: {', '.join(inner.model_fields) or 'none'}"
            for where, inner in dict((key.rpartition(".")[0], inner) for key, inner in unknown).items()
        )
        raise ValueError(f"{role} {name!r} takes no option {keys} ({known})")
    try:
        validated = model.model_validate(given)
    except ValidationError as error:
        problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in error.errors())
        raise ValueError(f"{role} {name!r}: bad option {problems}") from None
    always = {option for option, mark in _marks(model).items() if _on(validated, option, mark)}
    return validated.model_dump(mode="json", include=always) | validated.model_dump(mode="json", exclude_defaults=True)


def _marks(model: type[BaseModel]) -> dict[str, Recorded]:
    """The options of `model` marked `Recorded` where they are declared, by name: a subclass that gives a marked
    option another default (`gguf`'s reader) keeps its mark."""
    marks: dict[str, Recorded] = {}
    for declared in reversed(model.__mro__):
        if isinstance(declared, type) and issubclass(declared, BaseModel):
            for name, field in declared.model_fields.items():
                for mark in field.metadata:
                    if isinstance(mark, Recorded):
                        marks[name] = mark
    return {name: mark for name, mark in marks.items() if name in model.model_fields}


def _on(options: BaseModel, name: str, mark: Recorded) -> bool:
    """Whether a marked option is recorded: given, and its `while_on` option on."""
    if getattr(options, name) is None:
        return False
    return mark.while_on is None or getattr(options, mark.while_on) not in (None, "none")


def _unknown(model: type[BaseModel], given: Mapping[str, Any], prefix: str = "") -> list[tuple[str, type[BaseModel]]]:
    """(dotted key, the model it is not a field of) for every key of `given`, at any depth, that `model` lacks. Nested
    configs (`VLMConfig`, `DescriberConfig`, ...) ignore unknown fields on their own: a misspelling there would pass
    silently."""
    found: list[tuple[str, type[BaseModel]]] = []
    for key, value in given.items():
        field = model.model_fields.get(key)
        if field is None:
            found.append((f"{prefix}{key}", model))
        elif isinstance(value, Mapping) and (inner := _model_of(field.annotation)) is not None:
            found += _unknown(inner, value, f"{prefix}{key}.")
    return found


def _model_of(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model in a field's annotation (`VLMConfig | None` -> VLMConfig), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in get_args(annotation):
        if (inner := _model_of(argument)) is not None:
            return inner
    return None


def _without(options: dict[str, Any], names: frozenset[str]) -> dict[str, Any]:
    kept = {}
    for key, value in options.items():
        if key in names:
            continue
        kept[key] = _without(value, names) if isinstance(value, dict) else value
    return kept
