"""A peft LoRA adapter written as a llama.cpp LoRA GGUF: names, shapes, metadata and the q/k row order, read back."""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentcvr.lora_gguf import rotary_rows, write_lora_gguf

CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "num_hidden_layers": 2,
}


def adapter_folder(tmp_path, weights: dict[str, np.ndarray], alpha: float = 8.0):
    from safetensors.numpy import save_file

    folder = tmp_path / "adapter"
    folder.mkdir()
    save_file(weights, str(folder / "adapter_model.safetensors"))
    (folder / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": alpha, "peft_type": "LORA"}))
    return folder


def lora_pair(layer: str, rows: int, columns: int, rng) -> dict[str, np.ndarray]:
    prefix = f"base_model.model.model.layers.{layer}"
    return {
        f"{prefix}.lora_A.weight": rng.standard_normal((2, columns)).astype(np.float32),
        f"{prefix}.lora_B.weight": rng.standard_normal((rows, 2)).astype(np.float32),
    }


def test_the_adapter_reads_back_under_llama_cpp_names_with_its_alpha_and_rotary_rows(tmp_path):
    import gguf

    rng = np.random.default_rng(0)
    weights = lora_pair("0.self_attn.q_proj", 16, 16, rng) | lora_pair("1.self_attn.k_proj", 8, 16, rng)
    weights |= lora_pair("1.mlp.down_proj", 16, 24, rng)
    out = tmp_path / "adapter.gguf"
    written = write_lora_gguf(adapter_folder(tmp_path, weights), CONFIG, out, dtype="f32")
    assert written["tensors"] == 6 and written["rank"] == 2 and written["alpha"] == 8.0
    reader = gguf.GGUFReader(out)
    assert reader.fields["general.type"].contents() == "adapter"
    assert reader.fields["adapter.type"].contents() == "lora"
    assert reader.fields["adapter.lora.alpha"].contents() == pytest.approx(8.0)
    assert reader.fields["general.architecture"].contents() == "llama"
    tensors = {t.name: np.asarray(t.data).reshape(list(reversed(t.shape.tolist()))) for t in reader.tensors}
    assert set(tensors) == {
        f"blk.{layer}.{name}.weight.lora_{part}"
        for layer, name in ((0, "attn_q"), (1, "attn_k"), (1, "ffn_down"))
        for part in "ab"
    }
    q_b = weights["base_model.model.model.layers.0.self_attn.q_proj.lora_B.weight"]
    assert np.array_equal(tensors["blk.0.attn_q.weight.lora_b"], rotary_rows(q_b, 4))  # query heads
    k_b = weights["base_model.model.model.layers.1.self_attn.k_proj.lora_B.weight"]
    assert np.array_equal(tensors["blk.1.attn_k.weight.lora_b"], rotary_rows(k_b, 2))  # key-value heads
    down_b = weights["base_model.model.model.layers.1.mlp.down_proj.lora_B.weight"]
    assert np.array_equal(tensors["blk.1.ffn_down.weight.lora_b"], down_b)  # other layers as trained
    a = weights["base_model.model.model.layers.0.self_attn.q_proj.lora_A.weight"]
    assert np.array_equal(tensors["blk.0.attn_q.weight.lora_a"], a)  # A acts on inputs: never permuted


def test_what_llama_cpp_could_not_run_is_refused_by_name(tmp_path):
    rng = np.random.default_rng(0)
    folder = adapter_folder(tmp_path, lora_pair("0.self_attn.q_proj", 16, 16, rng))
    with pytest.raises(ValueError, match="LlamaForCausalLM only, not \\['Qwen2ForCausalLM'\\]"):
        write_lora_gguf(folder, CONFIG | {"architectures": ["Qwen2ForCausalLM"]}, tmp_path / "x.gguf")
    (folder / "adapter_config.json").write_text(json.dumps({"r": 2, "lora_alpha": 8, "use_dora": True}))
    with pytest.raises(ValueError, match="only a plain LoRA"):
        write_lora_gguf(folder, CONFIG, tmp_path / "x.gguf")
    with pytest.raises(FileNotFoundError, match="not a peft LoRA adapter"):
        write_lora_gguf(tmp_path / "nowhere", CONFIG, tmp_path / "x.gguf")
