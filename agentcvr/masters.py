"""Masters trained here and shipped in the package, by name, each checked file by file against its manifest.

A shipped master is a `train-sim` checkpoint folder (weights, tokenizer, `policy.json`, `tools.json`; what `HFPolicy`
loads) plus `manifest.json`: the sha256 of every file and the command that made it. A LoRA master (a warm start with
`model.lora_rank > 0`, which keeps its adapter in `adapter/`) ships the adapter alone, as a llama.cpp LoRA GGUF
(`adapter.gguf`), with its tokenizer; `TrainedGGUFPolicy` runs it over the registry base its policy.json names.
`master_folder(name)` refuses a folder whose files do not match, naming the file, so a damaged or half-copied master
never runs as if it were the one measured. `pack(source, folder, command)` makes such a folder from a training run's
`final/` or `warmstart/`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import yaml

from agentcvr.models import file_sha256

MANIFEST = "manifest.json"
# What HFPolicy needs of a checkpoint; everything else in a run folder (optimizer state, logs) stays behind.
CHECKPOINT_FILES = (
    "config.json",
    "generation_config.json",
    "model.safetensors",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "chat_template.jinja",
    "policy.json",
    "tools.json",
)
LORA_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "chat_template.jinja", "tools.json")
ADAPTER_FOLDER = "adapter"  # where a LoRA warm start keeps its peft adapter
LORA_ADAPTER = "adapter.gguf"
GGUF_PREFIX = "gguf:"  # a registry GGUF by name: the base a LoRA master runs over
SHIPPED = {name: Path(__file__).parent / "masters" / name for name in ("looker-v2", "looker-v5", "looker-v8")}
DEFAULT_TRAINED = "looker-v8"  # `--policy trained`


def master_folder(name: str | Path) -> Path:
    """A shipped master's folder, verified against its manifest; any other name is taken as a checkpoint folder."""
    if not (isinstance(name, str) and name in SHIPPED):
        folder = Path(name)
        if not folder.is_dir():
            raise FileNotFoundError(f"no shipped master ({', '.join(SHIPPED)}) nor checkpoint folder named {name!r}")
        return folder
    folder = SHIPPED[name]
    manifest = folder / MANIFEST
    if not manifest.is_file():
        raise FileNotFoundError(f"shipped master {name!r} has no {MANIFEST} in {folder}: the package is incomplete")
    for file, recorded in json.loads(manifest.read_text())["files"].items():
        path = folder / file
        if not path.is_file():
            raise FileNotFoundError(f"shipped master {name!r} is missing {file} ({folder})")
        if (digest := file_sha256(path)) != recorded:
            raise ValueError(f"shipped master {name!r}: {file} is damaged (sha256 {digest}, manifest says {recorded})")
    return folder


def pack(source: Path, folder: Path, command: str) -> dict:
    """Copy a checkpoint's inference files from `source` into `folder` (a LoRA checkpoint's adapter written as a
    llama.cpp LoRA GGUF instead of its merged weights) and write their manifest; returns it."""
    lora = (source / ADAPTER_FOLDER).is_dir()
    weights = () if lora else ("model.safetensors",)  # a LoRA checkpoint ships its adapter, not its merged weights
    missing = [f for f in ("config.json", *weights, "tokenizer.json") if not (source / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{source} is not a train-sim checkpoint: missing {', '.join(missing)}")
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    if lora:
        from agentcvr.lora_gguf import write_lora_gguf

        policy = json.loads((source / "policy.json").read_text())
        base = policy.get("base") or trained_base(source)
        registry_base(base, source)
        write_lora_gguf(
            source / ADAPTER_FOLDER, json.loads((source / "config.json").read_text()), folder / LORA_ADAPTER
        )
        from agentcvr.policies.hf_policy import TURN_TOKENS, checkpoint_turn_tokens

        spec = policy | {"base": base, TURN_TOKENS: checkpoint_turn_tokens(source)}  # the run's config stays behind
        (folder / "policy.json").write_text(json.dumps(spec))
        files = {name: file_sha256(folder / name) for name in (LORA_ADAPTER, "policy.json")}
    for name in LORA_FILES if lora else CHECKPOINT_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
            files[name] = file_sha256(folder / name)
    manifest = {"files": files, "command": command, "source": str(source)}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest


def registry_base(base: str, where: Path | str) -> str:
    """The registry model name in a LoRA master's base (`gguf:NAME`); a local GGUF file is refused, since it is not
    fetched and verified by name where the master runs."""
    if not base.startswith(GGUF_PREFIX) or base.endswith(".gguf"):
        raise ValueError(f"{where}: a LoRA master runs over a registry base (gguf:NAME), not {base!r}")
    return base[len(GGUF_PREFIX) :]


def trained_base(source: Path) -> str:
    """The pretrained base a checkpoint started from, by its training config (checkpoints that predate policy.json's
    `base`)."""
    config = source / "train_config.yaml"
    base = yaml.safe_load(config.read_text())["model"].get("name_or_path") if config.is_file() else None
    if not base:
        raise ValueError(f"{source}: no pretrained base recorded (policy.json `base` or train_config.yaml)")
    return base


def master_digest(name: str | Path) -> str:
    """What identifies a trained master's weights: the sha256 of a shipped (or packed) master's manifest, else of a
    checkpoint folder's weights file."""
    folder = master_folder(name)
    for file in (MANIFEST, LORA_ADAPTER, "model.safetensors"):
        if (folder / file).is_file():
            return file_sha256(folder / file)
    raise FileNotFoundError(f"{folder} holds no trained master: no {MANIFEST}, {LORA_ADAPTER} or model.safetensors")
