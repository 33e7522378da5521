"""A master trained here, run by llama.cpp: the registry base GGUF with the master's LoRA adapter GGUF on top.

A LoRA master (`agentcvr pack-master` of a `model.lora_rank > 0` warm start) ships only its adapter, tokenizer and
chat template; `policy.json` names its base (`gguf:smollm2-135m`), fetched and verified by `ensure_model`. The
conversation is rendered to token ids by the master's own tokenizer and chat template, exactly as in training
(`hf_policy.prompt_ids`), and llama.cpp continues those ids greedily until the end of the turn. The raw text goes back
to the loop, which parses it, as for `HFPolicy`: the same checkpoint in torch and here writes the same turns (up to
rounding, which `benchmarks/master_engines.py` measures).

One slot with `cache_prompt`: each turn evaluates only the new observation; streamed, so a stop request ends it
between tokens (`gguf.completion`).

`weights="merged"` (the default) runs the base with the adapter merged in, requantized to Q8_0, built once per adapter
into `<models>/merged/` (~10 s) and reused: a LoRA master's time goes to reading its observations, and llama.cpp reads
them ~1.9x faster from that file than from the Q4_1 base with the adapter applied per layer (`weights="lora"`, the
exact packed form; `benchmarks/trained_weights.py` measures both).
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Literal

from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput
from agentcvr.masters import LORA_ADAPTER, registry_base
from agentcvr.models import ensure_model, file_sha256, models_dir
from agentcvr.policies.gguf import completion, load_llama
from agentcvr.policies.hf_policy import (
    POLICY_FILE,
    checkpoint_protocol,
    checkpoint_tools,
    checkpoint_turn_tokens,
    load_tokenizer,
    prompt_ids,
)


def lora_base(folder: Path) -> str:
    """The registry name of the base a LoRA master was trained on (its policy.json `base`, `gguf:NAME`)."""
    spec = json.loads((folder / POLICY_FILE).read_text()) if (folder / POLICY_FILE).is_file() else {}
    return registry_base(spec.get("base") or "", folder / POLICY_FILE)


MERGED_FOLDER = "merged"
Weights = Literal["merged", "lora"]


def merged_weights(base: Path, adapter: Path, cache: Path | None = None) -> Path:
    """The Q8_0 GGUF of `base` with `adapter` merged in, built on first use into `cache` (default `<models>/merged`)
    and named by the adapter's sha256, so a retrained adapter gets its own file and a finished one is reused."""
    from agentcvr.lora_gguf import merge_lora_gguf

    folder = cache or models_dir() / MERGED_FOLDER
    out = folder / f"{Path(base).stem}+lora-{file_sha256(adapter)[:16]}.Q8_0.gguf"
    if not out.is_file():
        folder.mkdir(parents=True, exist_ok=True)
        print(f"merging {adapter} into {Path(base).name} once (Q8_0, ~10 s): {out}", file=sys.stderr)
        merge_lora_gguf(base, adapter, out)
    return out


class TrainedGGUFPolicy:
    """`TrainedGGUFPolicy(folder)`: a packed LoRA master (adapter.gguf, tokenizer, policy.json naming its base)."""

    def __init__(
        self,
        folder: str | Path,
        temperature: float = 0.0,
        max_new_tokens: int | None = None,
        n_ctx: int = 8192,
        threads: int | None = None,
        seed: int = 0,
        weights: Weights = "merged",
    ):
        self.path = Path(folder)
        if not (self.path / LORA_ADAPTER).is_file():
            raise FileNotFoundError(f"{self.path} is not a LoRA master: no {LORA_ADAPTER}")
        self.protocol = checkpoint_protocol(self.path)
        self.tools = checkpoint_tools(self.path, self.protocol)
        self.tokenizer = load_tokenizer(self.path)
        self.temperature, self.seed = temperature, seed
        self.max_new_tokens = max_new_tokens or checkpoint_turn_tokens(self.path)  # a turn's budget as trained
        threads = threads or min(os.cpu_count() or 1, 8)
        base, adapter = ensure_model(lora_base(self.path)), self.path / LORA_ADAPTER
        if weights == "merged":
            self.server = load_llama(merged_weights(base, adapter), n_ctx=n_ctx, threads=threads, seed=seed)
        elif weights == "lora":
            self.server = load_llama(base, n_ctx=n_ctx, threads=threads, seed=seed, lora=adapter)
        else:
            raise ValueError(f"weights={weights!r}: choose merged (the adapter merged into a Q8_0 base) or lora")

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
