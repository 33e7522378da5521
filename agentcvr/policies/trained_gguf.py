"""A master trained here, run by llama.cpp: the registry base GGUF with the master's LoRA adapter GGUF on top.

A LoRA master (`agentcvr pack-master` of a `model.lora_rank > 0` warm start) ships only its adapter, tokenizer and
chat template; `policy.json` names its base (`gguf:smollm2-135m`), fetched and verified by `ensure_model`. The
conversation is rendered to token ids by the master's own tokenizer and chat template, exactly as in training
(`hf_policy.prompt_ids`), and llama.cpp continues those ids greedily until the end of the turn. The raw text goes back
to the loop, which parses it, as for `HFPolicy`: the same checkpoint in torch and here writes the same turns (up to
rounding, which `benchmarks/master_engines.py` measures).

One slot with `cache_prompt`: each turn evaluates only the new observation; streamed, so a stop request ends it
between tokens (`gguf.completion`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.masters import LORA_ADAPTER, registry_base
from agentcvr.models import ensure_model
from agentcvr.policies.gguf import completion, load_llama
from agentcvr.policies.hf_policy import POLICY_FILE, checkpoint_protocol, checkpoint_tools, load_tokenizer, prompt_ids


def lora_base(folder: Path) -> str:
    """The registry name of the base a LoRA master was trained on (its policy.json `base`, `gguf:NAME`)."""
    spec = json.loads((folder / POLICY_FILE).read_text()) if (folder / POLICY_FILE).is_file() else {}
    return registry_base(spec.get("base") or "", folder / POLICY_FILE)


class TrainedGGUFPolicy:
    """`TrainedGGUFPolicy(folder)`: a packed LoRA master (adapter.gguf, tokenizer, policy.json naming its base)."""

    def __init__(
        self,
        folder: str | Path,
        temperature: float = 0.0,
        max_new_tokens: int = 256,
        n_ctx: int = 8192,
        threads: int | None = None,
        seed: int = 0,
    ):
        self.path = Path(folder)
        if not (self.path / LORA_ADAPTER).is_file():
            raise FileNotFoundError(f"{self.path} is not a LoRA master: no {LORA_ADAPTER}")
        self.protocol = checkpoint_protocol(self.path)
        self.tools = checkpoint_tools(self.path, self.protocol)
        self.tokenizer = load_tokenizer(self.path)
        self.temperature, self.max_new_tokens, self.seed = temperature, max_new_tokens, seed
        threads = threads or min(os.cpu_count() or 1, 8)
        base = ensure_model(lora_base(self.path))
        self.server = load_llama(base, n_ctx=n_ctx, threads=threads, seed=seed, lora=self.path / LORA_ADAPTER)

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        ids = prompt_ids(self.tokenizer, messages, self.tools)
        request: dict[str, Any] = {
            "prompt": ids,
            "n_predict": self.max_new_tokens,
            "temperature": self.temperature,
            "seed": self.seed,
            "cache_prompt": True,
        }
        response = completion(self.server, request, chat=False)
        text = response["choices"][0]["message"]["content"]
        used = response.get("usage") or {}
        return PolicyOutput(
            content=text.strip(), prompt_tokens=len(ids), completion_tokens=int(used.get("completion_tokens", 0))
        )
