"""The CCQA judge: the official prompt over an OpenAI-compatible URL (a real HTTP stub) and over a local chat model."""

import asyncio

import pytest

from agentcvr.openai_stub import OpenAIStub
from eval.crossvid.judge import ChatJudge, Judge, parse_judgement
from eval.crossvid.sample_tree import ITEMS

RAW = ITEMS["CCQA"][0]


def test_url_judge_sends_the_official_prompt_once():
    with OpenAIStub() as stub:
        stub.reply(content='<score>{"coverage": [true, true], "correctness": [true, false]}</score>')
        stub.fail(500)

        async def run():
            judge = Judge(stub.base_url, "judge")
            try:
                return await judge.score(RAW, "Video A sieves."), await judge.score(RAW, "again")
            finally:
                await judge.aclose()

        first, second = asyncio.run(run())
    assert parse_judgement(first.reply) == (3, 4)
    assert second.reply is None and "500" in second.error  # never retried: the item drops
    request = stub.requests[0]
    assert request["messages"][0] == {"role": "system", "content": "You are a helpful assistant."}
    prompt = request["messages"][1]["content"]
    assert "- Scoring Points: ['Tool (sieve vs towel)', 'Order of steps']" in prompt  # a Python list repr
    assert "- Model's Output: Video A sieves." in prompt and request["temperature"] == 0.0
    assert len(stub.requests) == 2


def test_chat_judge_records_a_local_backend_failure():
    def broken(messages):
        raise RuntimeError("out of memory")

    record = asyncio.run(ChatJudge(broken, "local").score(RAW, "x"))
    assert record.reply is None and record.error == "RuntimeError: out of memory"


@pytest.mark.gguf
def test_embedded_gguf_judge_answers_in_the_official_format():
    from agentcvr.policies.gguf import GGUFChat

    chat = GGUFChat(max_tokens=96)
    record = asyncio.run(ChatJudge(chat, chat.name).score(RAW, "Video A uses a sieve, video B a towel."))
    assert record.error is None and isinstance(record.reply, str) and record.reply.strip()
