"""A small Qwen2-architecture policy built from a config (no download), or a pretrained one for the GPU presets."""

from __future__ import annotations

from typing import TYPE_CHECKING

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


def load_policy_model(cfg: ModelConfig) -> PreTrainedModel:
    """A pretrained causal LM (GPU presets: Qwen3-4B/8B, or the language part of Qwen3-VL)."""
    import torch
    from transformers import AutoModelForCausalLM

    if not cfg.name_or_path:
        raise ValueError("model.kind=pretrained needs model.name_or_path")
    kwargs = {"dtype": getattr(torch, cfg.dtype)}
    if cfg.attn_implementation:
        kwargs["attn_implementation"] = cfg.attn_implementation
    return AutoModelForCausalLM.from_pretrained(cfg.name_or_path, **kwargs)


def parameter_count(model: PreTrainedModel) -> int:
    return sum(p.numel() for p in model.parameters())
