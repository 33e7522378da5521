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


def tiny_base(path, rng) -> dict[str, np.ndarray]:
    """A llama GGUF with a matrix, a vector and metadata of each kind (string, number, array): what a merge copies."""
    import gguf

    tensors = {
        "blk.0.ffn_down.weight": rng.standard_normal((32, 64)).astype(np.float32),
        "blk.0.attn_norm.weight": rng.standard_normal(64).astype(np.float32),
    }
    writer = gguf.GGUFWriter(str(path), arch="llama")
    writer.add_name("tiny")
    writer.add_block_count(2)
    writer.add_token_list(["<s>", "a", "b"])
    for name, tensor in tensors.items():
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return tensors


def test_a_merged_base_holds_the_adapter_in_its_weights_and_keeps_the_base_metadata(tmp_path):
    import gguf
    from gguf.quants import dequantize

    from agentcvr.lora_gguf import merge_lora_gguf

    rng = np.random.default_rng(1)
    base = tiny_base(tmp_path / "base.gguf", rng)
    pair = lora_pair("0.mlp.down_proj", 32, 64, rng)
    write_lora_gguf(adapter_folder(tmp_path, pair, alpha=4.0), CONFIG, tmp_path / "adapter.gguf", dtype="f32")
    written = merge_lora_gguf(tmp_path / "base.gguf", tmp_path / "adapter.gguf", tmp_path / "merged.gguf")
    assert written["merged"] == 1 and written["alpha"] == 4.0
    assert not list(tmp_path.glob("*.partial"))

    reader = gguf.GGUFReader(tmp_path / "merged.gguf")
    fields = {name: field.contents() for name, field in reader.fields.items() if not name.startswith("GGUF.")}
    assert fields["general.architecture"] == "llama" and fields["general.name"] == "tiny"
    assert fields["llama.block_count"] == 2 and fields["tokenizer.ggml.tokens"] == ["<s>", "a", "b"]
    tensors = {t.name: t for t in reader.tensors}
    matrix = tensors["blk.0.ffn_down.weight"]
    assert matrix.tensor_type == gguf.GGMLQuantizationType.Q8_0
    a = pair["base_model.model.model.layers.0.mlp.down_proj.lora_A.weight"]
    b = pair["base_model.model.model.layers.0.mlp.down_proj.lora_B.weight"]
    expected = base["blk.0.ffn_down.weight"] + (4.0 / 2) * (b @ a)
    merged = dequantize(matrix.data, matrix.tensor_type)
    step = np.abs(expected).max() / 127  # one Q8_0 step at the largest block scale
    assert np.abs(merged - expected).max() <= step
    assert np.abs(merged - base["blk.0.ffn_down.weight"]).max() > 10 * step  # the adapter is in it
    vector = tensors["blk.0.attn_norm.weight"]
    assert vector.tensor_type == gguf.GGMLQuantizationType.F32
    assert np.array_equal(np.asarray(vector.data), base["blk.0.attn_norm.weight"])


def test_a_merge_refuses_what_is_not_an_adapter_of_this_base(tmp_path):
    from agentcvr.lora_gguf import merge_lora_gguf

    rng = np.random.default_rng(2)
    tiny_base(tmp_path / "base.gguf", rng)
    with pytest.raises(ValueError, match="not a llama.cpp LoRA adapter"):
        merge_lora_gguf(tmp_path / "base.gguf", tmp_path / "base.gguf", tmp_path / "merged.gguf")
    pair = lora_pair("1.mlp.down_proj", 32, 64, rng)  # layer 1: the base has no such tensor
    write_lora_gguf(adapter_folder(tmp_path, pair), CONFIG, tmp_path / "adapter.gguf", dtype="f32")
    with pytest.raises(ValueError, match="blk.1.ffn_down.weight"):
        merge_lora_gguf(tmp_path / "base.gguf", tmp_path / "adapter.gguf", tmp_path / "merged.gguf")
    assert not list(tmp_path.glob("merged.gguf*"))  # nothing half-written left behind


def test_merged_weights_are_built_once_per_adapter(tmp_path, capsys):
    from agentcvr.policies.trained_gguf import merged_weights

    rng = np.random.default_rng(3)
    tiny_base(tmp_path / "base.gguf", rng)
    first, second = tmp_path / "one", tmp_path / "two"
    for folder in (first, second):
        folder.mkdir()
        pair = lora_pair("0.mlp.down_proj", 32, 64, rng)
        write_lora_gguf(adapter_folder(folder, pair), CONFIG, folder / "adapter.gguf", dtype="f32")
    cache = tmp_path / "cache"
    built = merged_weights(tmp_path / "base.gguf", first / "adapter.gguf", cache)
    assert built.is_file() and built.parent == cache and "merging" in capsys.readouterr().err
    stamp = built.stat().st_mtime_ns
    assert merged_weights(tmp_path / "base.gguf", first / "adapter.gguf", cache) == built
    assert built.stat().st_mtime_ns == stamp and capsys.readouterr().err == ""  # reused, not rebuilt
    other = merged_weights(tmp_path / "base.gguf", second / "adapter.gguf", cache)
    assert other != built and other.is_file()  # another adapter, another file
