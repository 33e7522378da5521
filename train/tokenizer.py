"""A byte-level BPE tokenizer trained on the generated corpus, with a chat template TRL can parse.

Pre-tokenization keeps every digit apart (so times and durations are composed digit by digit, and copying "42.5"
from the prompt into a tool call is the same few tokens everywhere) but does not split on spaces or punctuation, so
BPE merges the long fixed phrases of the system prompt, the tool schemas and the JSON of tool calls into single
tokens: a rendered episode is ~2.5x shorter than with word-level pre-tokenization, and attention cost falls with
its square. `max_token_length` bounds the merges.

The template is TRL's copy of Qwen2.5's (`trl.chat_template_utils.qwen2_5_chat_template`): tool calls are
`<tool_call>{"name": ..., "arguments": {...}}</tool_call>` and tool results `<tool_response>...</tool_response>`, so
`GRPOTrainer` recognises it (`add_response_schema`) and parses tool calls out of sampled text. The markers are
special tokens, so token boundaries never straddle them and pieces tokenized apart concatenate to the whole.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import PreTrainedTokenizerFast

EOS, PAD = "<|im_end|>", "<|endoftext|>"
SPECIAL_TOKENS = [PAD, "<|im_start|>", EOS, "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>"]


def train_tokenizer(texts: Iterable[str], vocab_size: int = 4096, max_token_length: int = 32) -> PreTrainedTokenizerFast:
    """Train BPE on `texts` (rendered conversations) and wrap it for transformers/TRL."""
    from trl.chat_template_utils import add_response_schema, qwen2_5_chat_template

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Digits(individual_digits=True), pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
    )
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),  # every byte is encodable: no unknown tokens, ever
        max_token_length=max_token_length,
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
