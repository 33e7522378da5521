"""A peft LoRA adapter written as a llama.cpp LoRA GGUF, so a master trained here runs over its registry base GGUF.

llama.cpp loads such a file next to the base model (`--lora`) and adds `alpha / rank * B (A x)` to every adapted
layer's output, which is what peft computes. Three conventions differ from peft's files, and each is handled here:
- names: peft's `base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight` is llama.cpp's
  `blk.0.attn_q.weight.lora_a` (gguf's own name map does the translation);
- rotary layout: llama.cpp's converter permutes the rows of the llama query and key projections (pairs of rotary
  dimensions are interleaved differently), so the rows of their B matrices get the same permutation;
- metadata: `general.type = adapter`, `adapter.type = lora`, `adapter.lora.alpha`, and the base's architecture.
Only the llama architecture (SmolLM2, the registry's trainable base) is handled; anything else is refused by name.

`merge_lora_gguf` goes the other way at run time: the base with the adapter added into its weights, written as one
Q8_0 GGUF. On these AVX-only cores llama.cpp reads prompts ~1.9x faster from it than from the registry's Q4_1 base
with the adapter applied per layer (`benchmarks/trained_weights.py`), and a LoRA master's time is its prompts.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import numpy as np

ADAPTER_WEIGHTS = "adapter_model.safetensors"
ADAPTER_CONFIG = "adapter_config.json"
LORA_KEY = re.compile(r"^base_model\.model\.(?P<layer>.+)\.lora_(?P<part>[AB])\.weight$")
ARCHITECTURES = {"LlamaForCausalLM": "llama"}  # transformers' class -> llama.cpp's architecture


def rotary_rows(weight: np.ndarray, heads: int) -> np.ndarray:
    """The row order llama.cpp's converter gives a llama query/key projection with `heads` heads."""
    return (
        weight.reshape(heads, 2, weight.shape[0] // heads // 2, *weight.shape[1:]).swapaxes(1, 2).reshape(weight.shape)
    )


def write_lora_gguf(adapter: Path, model_config: dict, out: Path, dtype: str = "f16") -> dict:
    """Write the peft adapter folder `adapter` (trained on a model with `model_config`, its config.json) as the
    llama.cpp LoRA file `out`; returns what it wrote (tensors, rank, alpha, bytes)."""
    import gguf
    from safetensors.numpy import load_file

    adapter = Path(adapter)
    for name in (ADAPTER_WEIGHTS, ADAPTER_CONFIG):
        if not (adapter / name).is_file():
            raise FileNotFoundError(f"{adapter} is not a peft LoRA adapter: no {name}")
    config = json.loads((adapter / ADAPTER_CONFIG).read_text())
    architecture = ARCHITECTURES.get((model_config.get("architectures") or ["?"])[0])
    if architecture is None:
        known, given = ", ".join(ARCHITECTURES), model_config.get("architectures")
        raise ValueError(f"LoRA export handles {known} only, not {given}")
    if config.get("use_dora") or config.get("use_rslora") or config.get("modules_to_save"):
        raise ValueError(f"{adapter}: only a plain LoRA exports (no DoRA, rsLoRA or fully trained modules)")
    heads, kv_heads = model_config["num_attention_heads"], model_config["num_key_value_heads"]
    names = gguf.get_tensor_name_map(gguf.MODEL_ARCH.LLAMA, model_config["num_hidden_layers"])
    storage = {"f16": np.float16, "f32": np.float32}[dtype]
    writer = gguf.GGUFWriter(str(out), arch=architecture)
    writer.add_type(gguf.GGUFType.ADAPTER)
    writer.add_string(gguf.Keys.Adapter.TYPE, "lora")
    writer.add_float32(gguf.Keys.Adapter.LORA_ALPHA, float(config["lora_alpha"]))
    tensors = 0
    for key, weight in sorted(load_file(str(adapter / ADAPTER_WEIGHTS)).items()):
        match = LORA_KEY.match(key)
        if match is None:
            raise ValueError(f"{adapter}: {key} is not a LoRA A/B weight")
        layer, part = match["layer"], match["part"]
        base = names.get_name(f"{layer}.weight", try_suffixes=(".weight",))
        if base is None:
            raise ValueError(f"{adapter}: llama.cpp has no tensor for {layer}")
        weight = weight.astype(np.float32)
        if part == "B" and layer.endswith("q_proj"):
            weight = rotary_rows(weight, heads)
        elif part == "B" and layer.endswith("k_proj"):
            weight = rotary_rows(weight, kv_heads)
        writer.add_tensor(f"{base}.lora_{part.lower()}", np.ascontiguousarray(weight.astype(storage)))
        tensors += 1
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {"tensors": tensors, "rank": config["r"], "alpha": config["lora_alpha"], "bytes": Path(out).stat().st_size}


def merge_lora_gguf(base: Path, adapter: Path, out: Path) -> dict:
    """Write `base` (a llama GGUF, any quantization gguf-py reads) with the llama.cpp LoRA `adapter` merged in as
    `out`: every matrix W + alpha / rank * B A, requantized to Q8_0 (vectors stay float32); the metadata is the
    base's. Written beside `out` and renamed into place, so a reader never sees half a file. Returns what it wrote."""
    import gguf
    from gguf.quants import dequantize, quantize

    reader, lora = gguf.GGUFReader(str(base)), gguf.GGUFReader(str(adapter))
    if lora.fields.get(gguf.Keys.Adapter.TYPE) is None or lora.fields[gguf.Keys.Adapter.TYPE].contents() != "lora":
        raise ValueError(f"{adapter} is not a llama.cpp LoRA adapter GGUF")
    alpha = float(lora.fields[gguf.Keys.Adapter.LORA_ALPHA].contents())
    parts = {t.name: dequantize(t.data, t.tensor_type).astype(np.float32) for t in lora.tensors}
    partial = Path(out).with_name(f"{Path(out).name}.{os.getpid()}.partial")  # two first uses never share one
    writer = gguf.GGUFWriter(str(partial), arch=reader.fields[gguf.Keys.General.ARCHITECTURE].contents())
    for field in reader.fields.values():
        if field.name.startswith("GGUF.") or field.name == gguf.Keys.General.ARCHITECTURE:
            continue  # the writer adds the header fields and the architecture itself
        kind = field.types[0]
        sub_type = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), kind, sub_type=sub_type)
    merged = set()
    for tensor in reader.tensors:
        weight = dequantize(tensor.data, tensor.tensor_type).astype(np.float32)
        if f"{tensor.name}.lora_a" in parts:
            a, b = parts[f"{tensor.name}.lora_a"], parts[f"{tensor.name}.lora_b"]  # (rank, in), (out, rank)
            weight = weight + (alpha / a.shape[0]) * (b @ a)
            merged.add(tensor.name)
        if weight.ndim == 1:
            writer.add_tensor(tensor.name, weight)
        else:
            packed = quantize(weight, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(tensor.name, packed, raw_shape=packed.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    unknown = {name.rsplit(".", 1)[0] for name in parts} - merged
    if unknown:
        partial.unlink(missing_ok=True)
        raise ValueError(f"{adapter} adapts tensors {base} does not have: {', '.join(sorted(unknown)[:5])}")
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    partial.replace(out)
    return {"merged": len(merged), "alpha": alpha, "bytes": Path(out).stat().st_size}
