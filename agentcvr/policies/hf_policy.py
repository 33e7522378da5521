"""A Hugging Face causal-LM checkpoint as a policy: what `agentcvr train-sim` produces (`--policy hf:PATH`).

The conversation is rendered with the checkpoint's own chat template and tool schemas (`tools.json` beside the
weights, written by training, so inference sees exactly the prompt the policy was trained on; the action models'
schemas otherwise), the model generates until `<|im_end|>`, and the raw text — `<tool_call>{...}</tool_call>`
blocks, or one object of the published JSON protocol — goes back to the loop, where `agentcvr.parsing` reads it.
Which of the two the checkpoint writes is recorded in `policy.json` (`{"protocol": "json"}`); a checkpoint without
it writes tool calls. A JSON-protocol checkpoint is shown no tool schemas: its system prompt describes the actions.
Greedy by default, as the paper's inference.
transformers and torch are imported here only, so `import agentcvr` stays light.
"""

from __future__ import annotations

import json
from pathlib import Path

from agentcvr.actions import tool_schemas
from agentcvr.episode import Episode
from agentcvr.interfaces import PolicyOutput

TOOLS_FILE = "tools.json"
POLICY_FILE = "policy.json"  # {"protocol": "tools" | "json"}: the action format the checkpoint was trained to write
TURN_TOKENS = "max_turn_tokens"  # policy.json's key for the tokens a turn was given in training
DEFAULT_TURN_TOKENS = 256  # a turn's budget for checkpoints that record none (made before it was recorded)
# Tokenizers trained by train-sim declare this class: loaded as saved (AutoTokenizer would rebuild a Qwen2 model's
# tokenizer with Qwen2's own pre-tokenizer and break a locally trained vocabulary).
PLAIN_TOKENIZER = "TokenizersBackend"


def load_tokenizer(path: str | Path):
    """The checkpoint's tokenizer, exactly as saved when it declares `PLAIN_TOKENIZER`, else through AutoTokenizer."""
    from transformers import AutoTokenizer, PreTrainedTokenizerFast

    config_file = Path(path) / "tokenizer_config.json"
    config = json.loads(config_file.read_text()) if config_file.exists() else {}
    if config.get("tokenizer_class") == PLAIN_TOKENIZER:
        return PreTrainedTokenizerFast.from_pretrained(path)
    return AutoTokenizer.from_pretrained(path)


def checkpoint_protocol(path: str | Path) -> str:
    """The action format a checkpoint writes, from its `policy.json`; "tools" when it has none."""
    manifest = Path(path) / POLICY_FILE
    if not manifest.exists():
        return "tools"
    protocol = json.loads(manifest.read_text()).get("protocol")
    if protocol not in ("tools", "json"):
        raise ValueError(f"{manifest}: protocol must be 'tools' or 'json', got {protocol!r}")
    return protocol


def checkpoint_turn_tokens(path: str | Path) -> int:
    """The tokens a turn was given in training (policy.json, else the run's train_config.yaml `agent.max_turn_tokens`,
    else `DEFAULT_TURN_TOKENS`): a shorter budget at inference cuts the turns the policy learned to write (the
    search's eight MOC windows run past 256 tokens) into unparseable calls."""
    folder = Path(path)
    spec = json.loads((folder / POLICY_FILE).read_text()) if (folder / POLICY_FILE).is_file() else {}
    if TURN_TOKENS in spec:
        return int(spec[TURN_TOKENS])
    config = folder / "train_config.yaml"
    if config.is_file():
        import yaml

        recorded = (yaml.safe_load(config.read_text()) or {}).get("agent", {}).get(TURN_TOKENS)
        if recorded:
            return int(recorded)
    return DEFAULT_TURN_TOKENS


def prompt_ids(tokenizer, messages: list[dict], tools: list[dict] | None) -> list[int]:
    """The chat-template rendering of the conversation, with the tools (if any), ending at the assistant header: the
    prompt a checkpoint was trained on, whichever engine then runs it."""
    rendered = tokenizer.apply_chat_template(
        messages, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
    )
    return list(rendered["input_ids"])


def checkpoint_tools(path: str | Path, protocol: str) -> list[dict] | None:
    """The tool schemas a checkpoint was trained with: none for the JSON protocol, `tools.json` when saved."""
    if protocol == "json":
        return None
    tools_file = Path(path) / TOOLS_FILE
    return json.loads(tools_file.read_text()) if tools_file.exists() else tool_schemas()


class HFPolicy:
    """`HFPolicy(path)`: a checkpoint folder or hub id (model + tokenizer with a chat template); `tools` overrides the
    schemas shown to the model (tools protocol only)."""

    def __init__(
        self,
        path: str | Path,
        temperature: float = 0.0,
        max_new_tokens: int | None = None,
        device: str = "cpu",
        model=None,
        tokenizer=None,
        tools: list[dict] | None = None,
    ):
        import torch
        from transformers import AutoModelForCausalLM

        self.path = Path(path)
        self.temperature, self.device = temperature, device
        self.max_new_tokens = max_new_tokens or checkpoint_turn_tokens(self.path)  # a turn's budget as trained
        self.tokenizer = tokenizer or load_tokenizer(self.path)
        self.model = model or AutoModelForCausalLM.from_pretrained(self.path, dtype=torch.float32).to(device)
        self.model.eval()
        self.protocol = checkpoint_protocol(self.path)
        if self.protocol == "json" and tools is not None:
            raise ValueError(f"{self.path} writes the published JSON protocol: it takes no tool schemas")
        self.tools = tools if tools is not None else checkpoint_tools(self.path, self.protocol)
        # Ids after which generation stops: the end of the assistant turn (and the pad/eos the config names).
        self.stop_ids = sorted(
            {i for i in (self.tokenizer.eos_token_id, self.model.generation_config.eos_token_id) if isinstance(i, int)}
        )

    def prompt_ids(self, messages: list[dict]) -> list[int]:
        return prompt_ids(self.tokenizer, messages, self.tools)

    def act(self, messages: list[dict], episode: Episode) -> PolicyOutput:
        return self.act_batch([messages])[0]

    def act_batch(self, conversations: list[list[dict]]) -> list[PolicyOutput]:
        """One assistant turn for each conversation, generated as one left-padded batch."""
        import torch

        prompts = [self.prompt_ids(messages) for messages in conversations]
        width = max(len(ids) for ids in prompts)
        pad = self.tokenizer.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(ids)) + ids for ids in prompts], device=self.device)
        attention = torch.tensor([[0] * (width - len(ids)) + [1] * len(ids) for ids in prompts], device=self.device)
        sampling = (
            {"do_sample": True, "temperature": self.temperature} if self.temperature > 0 else {"do_sample": False}
        )
        with torch.no_grad():
            output = self.model.generate(
                input_ids=input_ids,
                attention_mask=attention,
                max_new_tokens=self.max_new_tokens,
                eos_token_id=self.stop_ids,
                pad_token_id=pad,
                top_k=None,
                top_p=None,
                **sampling,
            )
        results = []
        for ids, row in zip(prompts, output[:, width:].tolist(), strict=True):
            end = next((i for i, token in enumerate(row) if token in self.stop_ids), len(row))
            new = row[:end]
            # Keep special tokens: <tool_call> markers are special tokens of our tokenizers and the parser needs them.
            text = self.tokenizer.decode(new, skip_special_tokens=False)
            results.append(PolicyOutput(content=text.strip(), prompt_tokens=len(ids), completion_tokens=len(new)))
        return results
