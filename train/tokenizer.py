"""A byte-level BPE tokenizer trained on the generated corpus, with a chat template TRL can parse.

Word-level BPE (GPT-2's split, every digit its own token) keeps content lexical: "bridge" in an observation and
"bridge" in an option are the same token, so a tiny model can match them by attention, and times are composed digit
by digit, so copying "137" from the prompt into a tool call is the same three tokens everywhere. What never varies is
compressed instead: the rendered system block (instructions + tool schemas, ~600 words) is two added tokens around
the turn limit, and the JSON scaffolding of a tool call (`{"name": "observe", "arguments": {"video": ` ...) one token
per piece, so an episode is ~300 tokens and a tool call ~15.

The template is TRL's copy of Qwen2.5's (`trl.chat_template_utils.qwen2_5_chat_template`): tool calls are
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` and tool results `<tool_response>...</tool_response>`, so
`GRPOTrainer` recognises it (`add_response_schema`) and parses tool calls out of sampled text. The markers are
special tokens, so pieces tokenized apart concatenate to the whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

EOS, PAD = "<|im_end|>", "<|endoftext|>"
SPECIAL_TOKENS = [PAD, "<|im_start|>", EOS, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]
# the keys of the published JSON protocol's turn object, after its first key
JSON_KEYS = (
    "thought", "params", "observation_targets", "start_time", "end_time", "num_frames", "focus_prompt", "final_answer"
)  # fmt: skip
_SENTINEL_TURNS = 987654321  # rendered in place of max_turns to find where the system block varies


def boilerplate(tool_schemas: list[dict] | None, protocol: str = "tools") -> list[str]:
    """The fixed strings that become single tokens: the system block on both sides of its turn limit, and the JSON
    scaffolding the policy writes: around tool-call arguments (tools), or the published protocol's keys (json)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    from agentcvr.prompts import system_prompt

    template = _template_only(qwen2_5_chat_template)
    system = system_prompt(protocol, _SENTINEL_TURNS)  # type: ignore[arg-type]
    messages = [{"role": "system", "content": system}, {"role": "user", "content": ""}]
    text = template.apply_chat_template(messages, tools=tool_schemas if protocol == "tools" else None, tokenize=False)
    block = text[: text.index("<|im_start|>user")]
    before, after = block.split(str(_SENTINEL_TURNS))
    pieces = [before, after]
    if protocol == "json":
        pieces += [f'{{"action": "{action}"' for action in ("observe", "get_caption", "answer")]
        pieces += [f', "{key}": ' for key in JSON_KEYS] + ['{"video_index": ', '"}}', "}]"]
        return list(dict.fromkeys(pieces))
    for schema in tool_schemas or []:
        function = schema["function"]
        names = list(function["parameters"]["properties"])
        first = f'\n{{"name": "{function["name"]}", "arguments": {{"{names[0]}": '
        pieces.append(first + ('"' if _is_string(function, names[0]) else ""))
        for name in names[1:]:
            pieces.append(f', "{name}": ' + ('"' if _is_string(function, name) else ""))
    pieces += ['"}}\n', "}}\n"]
    return list(dict.fromkeys(pieces))


def _is_string(function: dict, name: str) -> bool:
    return function["parameters"]["properties"][name].get("type") == "string"


def _template_only(chat_template: str) -> PreTrainedTokenizerFast:
    """A throwaway tokenizer that only renders the chat template (its vocabulary is never used)."""
    bpe = Tokenizer(models.BPE(unk_token=None))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOS, pad_token=PAD)
    tokenizer.chat_template = chat_template
    return tokenizer


def render_with_template(conversations: list[list[dict]], tools: list[dict] | None) -> list[str]:
    """Conversations rendered by the Qwen2.5 chat template, before any tokenizer exists (the training corpus)."""
    from trl.chat_template_utils import qwen2_5_chat_template

    template = _template_only(qwen2_5_chat_template)
    return [template.apply_chat_template(c, tools=tools, tokenize=False) for c in conversations]


def train_tokenizer(
    texts: Iterable[str], vocab_size: int = 4096, fixed: Iterable[str] = (), split_digits: bool = True
) -> PreTrainedTokenizerFast:
    """Train BPE on `texts` (rendered conversations); `fixed` strings become single tokens; `split_digits=False`
    keeps digit runs whole, so BPE can merge frequent numbers into one token each."""
    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=split_digits), pre_tokenizers.ByteLevel(add_prefix_space=False)]
    )
    bpe.decoder = decoders.ByteLevel()
    bpe.add_special_tokens(SPECIAL_TOKENS)
    bpe.add_tokens([AddedToken(piece, normalized=False, special=False) for piece in fixed])
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte is encodable: no unknown tokens, ever
        show_progress=False,
    )
    bpe.train_from_iterator(texts, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        eos_token=EOS,
        pad_token=PAD,
        bos_token=None,
        padding_side="left",  # generation pads prompts on the left
        additional_special_tokens=SPECIAL_TOKENS[1:2] + SPECIAL_TOKENS[3:],
    )
    tokenizer.chat_template = qwen2_5_chat_template
    add_response_schema(tokenizer)  # lets TRL's parse_response find tool calls in sampled text
    return tokenizer


def load_tokenizer(path: str) -> PreTrainedTokenizerFast:
    """A saved tokenizer with its response template (TRL's tool-call parser) restored where missing."""
    from trl.chat_template_utils import add_response_schema

    from agentcvr.policies.hf_policy import load_tokenizer as load

    tokenizer = load(path)
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        try:
            add_response_schema(tokenizer)
        except ValueError:
            pass  # a template TRL does not know: HFPolicy still works (agentcvr.parsing reads the text)
    return tokenizer


def mark_plain(folder: Path) -> None:
    """Declare a saved tokenizer as loaded-as-saved (see agentcvr.policies.hf_policy.PLAIN_TOKENIZER)."""
    from agentcvr.policies.hf_policy import PLAIN_TOKENIZER

    path = folder / "tokenizer_config.json"
    config = json.loads(path.read_text())
    config["tokenizer_class"] = PLAIN_TOKENIZER
    path.write_text(json.dumps(config, indent=2))
