"""Masters trained here and shipped in the package, by name, each checked file by file against its manifest.

A shipped master is a `train-sim` checkpoint folder (weights, tokenizer, `policy.json`, `tools.json`; what `HFPolicy`
loads) plus `manifest.json`: the sha256 of every file and the command that made it. `master_folder(name)` refuses a
folder whose files do not match, naming the file, so a damaged or half-copied master never runs as if it were the one
measured. `pack(source, folder, command)` makes such a folder from a training run's `final/` or `warmstart/`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

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
SHIPPED = {"looker-v2": Path(__file__).parent / "masters" / "looker-v2"}
DEFAULT_TRAINED = "looker-v2"  # `--policy trained`


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
    """Copy a checkpoint's inference files from `source` into `folder` and write their manifest; returns it."""
    missing = [f for f in ("config.json", "model.safetensors", "tokenizer.json") if not (source / f).is_file()]
    if missing:
        raise FileNotFoundError(f"{source} is not a train-sim checkpoint: missing {', '.join(missing)}")
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for name in CHECKPOINT_FILES:
        if (source / name).is_file():
            shutil.copyfile(source / name, folder / name)
            files[name] = file_sha256(folder / name)
    manifest = {"files": files, "command": command, "source": str(source)}
    (folder / MANIFEST).write_text(json.dumps(manifest, indent=2) + "\n")
    return manifest
