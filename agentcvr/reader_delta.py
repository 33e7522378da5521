"""A fine-tuned reader shipped as its difference from the registry base: small enough for the repository.

The fine-tuned encoder weighs 91 MB in float32; what fine-tuning changed is what ships. Each weight's difference from
all-MiniLM-L6-v2 (`minilm-l6`, fetched and sha256-verified by `agentcvr.models`) is stored in int8 with one float scale
per row; word-embedding rows whose token never moved (tokens the training text never held: only weight decay touched
them) are left out. `unpack` adds the difference back onto the base and writes an ordinary reader folder.

    pack(Path("runs/reader/reader"), ensure_model("minilm-l6"), Path("runs/reader/reader.safetensors"))
    unpack(Path("runs/reader/reader.safetensors"), ensure_model("minilm-l6"), Path("runs/reader/unpacked"))
"""

from __future__ import annotations

import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

from agentcvr.reader import HEAD_FILE

WEIGHTS = "model.safetensors"
_EMBEDDINGS = "embeddings.word_embeddings.weight"
_MOVED = 1e-3  # an embedding row ships when its change exceeds this share of its norm (decay alone: ~4e-4)


def _quantize(delta: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    rows = delta.reshape(delta.shape[0], -1) if delta.dim() > 1 else delta.reshape(1, -1)
    scale = rows.abs().amax(dim=1).clamp_min(1e-12) / 127.0
    return torch.round(rows / scale[:, None]).to(torch.int8), scale.to(torch.float32)


def pack(reader: Path, base: Path, out: Path) -> dict[str, int]:
    """Write `reader`'s difference from `base` (and its head) to one safetensors file; returns sizes."""
    tuned, original = load_file(reader / WEIGHTS), _weights(base)
    if set(tuned) != set(original):
        raise ValueError(f"{reader} and {base} hold different weights: not a reader of this base")
    tensors: dict[str, torch.Tensor] = {}
    for name, weight in tuned.items():
        delta = weight.float() - original[name].float()
        if name == _EMBEDDINGS:
            moved = delta.norm(dim=1) > _MOVED * original[name].float().norm(dim=1)
            rows = moved.nonzero().squeeze(1)
            tensors[f"{name}.rows"] = rows.to(torch.int32)
            delta = delta[rows]
        values, scale = _quantize(delta)
        tensors[f"{name}.q"], tensors[f"{name}.scale"] = values, scale
    for key, value in torch.load(reader / HEAD_FILE, weights_only=True).items():
        tensors[f"head.{key}"] = value.float()
    out.parent.mkdir(parents=True, exist_ok=True)
    save_file(tensors, str(out), metadata={"format": "agentcvr-reader-delta-1"})
    return {"bytes": out.stat().st_size, "embedding_rows": int(tensors[f"{_EMBEDDINGS}.rows"].numel())}


def unpack(packed: Path, base: Path, out: Path) -> Path:
    """Rebuild the reader folder `out` from the base and the packed difference (written whole, then renamed)."""
    stored, original = load_file(str(packed)), _weights(base)
    weights = {}
    for name, weight in original.items():
        if f"{name}.q" not in stored:
            raise ValueError(f"{packed} has no difference for {name}: not packed from this base")
        delta = stored[f"{name}.q"].float() * stored[f"{name}.scale"][:, None]
        if name == _EMBEDDINGS:
            full = torch.zeros_like(weight, dtype=torch.float32)
            full[stored[f"{name}.rows"].long()] = delta
            delta = full
        weights[name] = (weight.float() + delta.reshape(weight.shape)).to(weight.dtype)
    head = {key.removeprefix("head."): value for key, value in stored.items() if key.startswith("head.")}
    staging = out.with_name(out.name + ".partial")
    shutil.rmtree(staging, ignore_errors=True)
    shutil.copytree(base, staging, ignore=shutil.ignore_patterns(WEIGHTS, ".verified.json"))
    save_file(weights, str(staging / WEIGHTS), metadata={"format": "pt"})
    torch.save(head, staging / HEAD_FILE)
    shutil.rmtree(out, ignore_errors=True)
    staging.rename(out)
    return out


def _weights(base: Path) -> dict[str, torch.Tensor]:
    """The base's trained weights (its file also keeps `position_ids`, a buffer that transformers no longer saves)."""
    return {k: v for k, v in load_file(base / WEIGHTS).items() if not k.endswith("position_ids")}
