"""A small Qwen2-architecture policy built from a config (no download), or a pretrained one for the GPU presets
(a hub id, a folder, or a registry GGUF dequantized once: `model.name_or_path: gguf:qwen2.5-coder-0.5b`)."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from agentcvr.masters import GGUF_PREFIX

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

    from train.config import ModelConfig


def build_tiny_model(cfg: ModelConfig, tokenizer: PreTrainedTokenizerBase, seed: int = 0) -> PreTrainedModel:
    """A randomly initialised Qwen2ForCausalLM sized by `cfg`; ~1.5 M parameters for the cpu-tiny preset."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    config = Qwen2Config(
        vocab_size=len(tokenizer),
        hidden_size=cfg.hidden_size,
        intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_hidden_layers,
        num_attention_heads=cfg.num_attention_heads,
        num_key_value_heads=cfg.num_key_value_heads,
        max_position_embeddings=cfg.max_position_embeddings,
        tie_word_embeddings=True,  # the embedding is most of a tiny model: share it with the output layer
        bos_token_id=None,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    model = Qwen2ForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    return model


def load_policy_model(cfg: ModelConfig, source: str | None = None) -> PreTrainedModel:
    """A pretrained causal LM (GPU presets: Qwen3-4B/8B, or the language part of Qwen3-VL) from `source` (what
    `pretrained_source` resolved), else `cfg.name_or_path`."""
    import torch
    from transformers import AutoModelForCausalLM

    source = source or cfg.name_or_path
    if not source:
        raise ValueError("model.kind=pretrained needs model.name_or_path")
    kwargs = {"dtype": getattr(torch, cfg.dtype)}
    if cfg.attn_implementation:
        kwargs["attn_implementation"] = cfg.attn_implementation
    return AutoModelForCausalLM.from_pretrained(source, **kwargs)


def pretrained_source(cfg: ModelConfig, base: Path) -> str:
    """What kind=pretrained loads from (the trainer, its reference model, the tokenizer alike): `name_or_path` as
    given, or, for `gguf:NAME` (a registry GGUF, fetched and verified by `ensure_model`) or `gguf:FILE.gguf`, the
    folder `base` holding that file's model and tokenizer (its chat template included) dequantized to float32, made
    once (~2 min and ~4 GB RAM for the 0.5B on one core). Every later stage then loads a plain folder, as it would a
    hub checkpoint."""
    if not cfg.name_or_path:
        raise ValueError("model.kind=pretrained needs model.name_or_path")
    if not cfg.name_or_path.startswith(GGUF_PREFIX):
        return cfg.name_or_path
    base = Path(base)
    if not (base / DEQUANTIZED).exists():
        from agentcvr.models import ensure_model

        name = cfg.name_or_path[len(GGUF_PREFIX) :]
        dequantize_gguf(Path(name) if name.endswith(".gguf") else ensure_model(name), base)
    return str(base)


DEQUANTIZED = "DEQUANTIZED"  # written last: the folder is complete; it names the GGUF file


def dequantize_gguf(gguf: Path, folder: Path) -> None:
    """Save a GGUF file's model (float32) and tokenizer as a transformers checkpoint in `folder`."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    building = folder.with_name(f".{folder.name}.{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)
    # The weights are plain float32 now, but transformers keeps the GGUF quantizer on the model and then refuses to
    # save it ("quantized with gguf and is not serializable"): the trainer's checkpoints and the final policy too.
    model.hf_quantizer = None
    del model.config.quantization_config
    model.save_pretrained(building)
    tokenizer.save_pretrained(building)
    (building / DEQUANTIZED).write_text(gguf.name)
    try:
        building.rename(folder)
    except OSError:  # another process finished first
        shutil.rmtree(building, ignore_errors=True)
        if not (folder / DEQUANTIZED).exists():
            raise


def parameter_count(model: PreTrainedModel) -> int:
    return sum(p.numel() for p in model.parameters())


def with_lora(model: PreTrainedModel, cfg: ModelConfig) -> PreTrainedModel:
    """`model` with a trainable LoRA of rank `cfg.lora_rank` on `cfg.lora_targets`; every other weight frozen."""
    from peft import LoraConfig, get_peft_model

    if cfg.kind != "pretrained":
        raise ValueError("model.lora_rank > 0 needs model.kind=pretrained: a tiny model is trained whole")
    layers = model.config.num_hidden_layers
    top = cfg.lora_top_layers
    if top is not None and top > layers:
        raise ValueError(f"model.lora_top_layers={top} but the model has {layers} layers")
    lora = LoraConfig(
        r=cfg.lora_rank,
        lora_alpha=cfg.lora_alpha,
        lora_dropout=0.0,
        target_modules=cfg.lora_targets,
        layers_to_transform=None if top is None else list(range(layers - top, layers)),
    )
    return get_peft_model(model, lora)


def trainable_count(model: PreTrainedModel) -> int:
    return sum(p.numel() for p in model.parameters() if p.requires_grad)
