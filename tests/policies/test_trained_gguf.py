"""A LoRA master in llama.cpp: a peft adapter on the registry SmolLM2, packed as a llama.cpp LoRA GGUF, runs over the
quantized base and agrees with the same adapter merged in torch.

Marked `gguf`: it needs SmolLM2-135M (`agentcvr models`) and takes ~30 s on one thread (the dequantized base).
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from agentcvr.interfaces import Limits
from agentcvr.models import get_spec, models_dir

pytestmark = pytest.mark.gguf

BASE = "smollm2-135m"
WEIGHTS = get_spec(BASE).path(models_dir())
TARGETS = ["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"]


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    """The registry SmolLM2 dequantized into a transformers folder, as train-sim's `gguf:` base."""
    if not WEIGHTS.is_file():
        pytest.skip(f"SmolLM2 weights not fetched ({WEIGHTS}); run `agentcvr models`")
    from train.tiny_model import dequantize_gguf

    folder = tmp_path_factory.mktemp("smollm2") / "base"
    dequantize_gguf(WEIGHTS, folder)
    return folder


@pytest.fixture(scope="module")
def lora_checkpoint(base, tmp_path_factory):
    """A warm start's folder as train-sim writes it for `model.lora_rank > 0`: merged weights plus `adapter/`. The
    adapter's B matrices are random (small), so it changes what the model says."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from train.pipeline import save_policy

    folder = tmp_path_factory.mktemp("lora") / "warmstart"
    model = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules=TARGETS))
    generator = torch.Generator().manual_seed(0)
    with torch.no_grad():
        for name, weight in model.named_parameters():
            if "lora_" in name:
                weight.copy_(torch.randn(weight.shape, generator=generator) * 0.02)
    model.save_pretrained(folder / "adapter")
    merged = model.merge_and_unload()
    tokenizer = AutoTokenizer.from_pretrained(base)
    save_policy(merged, tokenizer, folder, plain_tokenizer=False, protocol="json", base=f"gguf:{BASE}", turn_tokens=512)
    return folder


def test_the_query_and_key_rows_are_ordered_as_llama_cpp_orders_them(base):
    """llama.cpp's converter permutes the llama q/k rows; the adapter's B rows must follow (checked on the base)."""
    import gguf
    from gguf.quants import dequantize
    from safetensors.numpy import load_file

    from agentcvr.lora_gguf import rotary_rows

    tensors = {t.name: t for t in gguf.GGUFReader(WEIGHTS).tensors}
    ours = load_file(str(base / "model.safetensors"))
    for gguf_name, name, heads in (("attn_q", "q_proj", 9), ("attn_k", "k_proj", 3)):
        tensor = tensors[f"blk.0.{gguf_name}.weight"]
        theirs = dequantize(tensor.data, tensor.tensor_type).reshape(list(reversed(tensor.shape.tolist())))
        weight = ours[f"model.layers.0.self_attn.{name}.weight"]
        assert np.array_equal(rotary_rows(weight, heads), theirs)
        assert not np.array_equal(weight, theirs)  # the permutation is not the identity


def test_a_packed_lora_master_runs_in_llama_cpp_as_it_runs_merged_in_torch(lora_checkpoint, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM

    from agentcvr.agent import Agent
    from agentcvr.components import make_policy
    from agentcvr.masters import LORA_ADAPTER, master_folder, pack
    from agentcvr.policies.gguf import completion, load_llama
    from agentcvr.policies.hf_policy import load_tokenizer, prompt_ids
    from agentcvr.policies.trained_gguf import TrainedGGUFPolicy, merged_weights
    from scripts_gen.generate import generate_one
    from simulator.script_sim import ScriptSimulator

    master = tmp_path / "master"
    manifest = pack(lora_checkpoint, master, "test")
    assert set(manifest["files"]) >= {LORA_ADAPTER, "policy.json", "tokenizer.json"}
    assert "model.safetensors" not in manifest["files"]  # the adapter ships, not the merged weights
    assert (master / LORA_ADAPTER).stat().st_size < 3e6  # 1.2 M LoRA weights in float16
    spec = json.loads((master / "policy.json").read_text())
    assert spec == {"protocol": "json", "base": f"gguf:{BASE}", "max_turn_tokens": 512}  # a turn's budget as trained

    # The next token's log-probabilities, llama.cpp (base + adapter, and base alone) against torch (merged).
    tokenizer = load_tokenizer(master)
    messages = [{"role": "user", "content": "Which video shows the chef adding garlic? A. video 1 B. video 2"}]
    ids = prompt_ids(tokenizer, messages, None)
    with torch.no_grad():
        merged = AutoModelForCausalLM.from_pretrained(lora_checkpoint, dtype=torch.float32)
        torch_logprobs = torch.log_softmax(merged(torch.tensor([ids])).logits[0, -1], -1)

    def top(lora, weights=WEIGHTS):
        server = load_llama(weights, n_ctx=1024, threads=1, lora=lora)
        response = completion(server, {"prompt": ids, "n_predict": 1, "temperature": 0, "n_probs": 10}, chat=False)
        return {t["id"]: t["logprob"] for t in response["choices"][0]["logprobs"]["content"][0]["top_logprobs"]}

    adapted, plain = top(master / LORA_ADAPTER), top(None)
    gap = max(abs(logprob - torch_logprobs[i].item()) for i, logprob in adapted.items())
    moved = max(abs(logprob - torch_logprobs[i].item()) for i, logprob in plain.items())
    assert gap < 0.35 < moved  # quantized-base noise (~0.15) against what the adapter changes
    # The adapter merged into a Q8_0 copy of the base (`weights="merged"`, the default) agrees with torch as closely.
    merged = merged_weights(WEIGHTS, master / LORA_ADAPTER, tmp_path / "merged")
    merged_gap = max(abs(logprob - torch_logprobs[i].item()) for i, logprob in top(None, merged).items())
    assert merged_gap < 0.35

    # The packed master as `--policy trained:FOLDER`: llama.cpp, through the one loop, with its manifest checked.
    assert master_folder(master) == master
    script = generate_one("BU", 0, 10000)
    built = make_policy(f"trained:{master}", {script.id: script}, reader="none", weights="lora")
    assert isinstance(built, TrainedGGUFPolicy) and built.protocol == "json"
    result = Agent(built, ScriptSimulator({script.id: script}), Limits(max_turns=2)).run(script.episode)
    assert result.steps and result.steps[0].prompt_tokens > 0  # llama.cpp wrote a turn and the loop took it
    with pytest.raises(FileNotFoundError, match="not a LoRA master"):
        TrainedGGUFPolicy(lora_checkpoint)  # the merged checkpoint runs in torch (`hf:`), not here
