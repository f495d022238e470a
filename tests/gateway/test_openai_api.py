"""The OpenAI-compatible API, driven by the official `openai` package as a real client."""

from __future__ import annotations

import openai
import pytest

from tests.fakes.llm_server import ScriptedLLM, Step
from tests.gateway.harness import gateway_harness


def client(h, token: str) -> openai.AsyncOpenAI:  # type: ignore[no-untyped-def]
    return openai.AsyncOpenAI(base_url=h.url("/v1"), api_key=token, max_retries=0)


async def test_models_and_a_plain_completion(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "time_now", "arguments": {}}]), "It is noon.")
    async with gateway_harness(tmp_path, llm) as h:
        api = client(h, await h.pair())
        models = await api.models.list()
        completion = await api.chat.completions.create(
            model="edge", messages=[{"role": "system", "content": "be brief"}, {"role": "user", "content": "time?"}])
    assert [m.id for m in models.data] == ["edge"]
    assert completion.choices[0].message.content == "It is noon." and completion.choices[0].finish_reason == "stop"
    assert completion.usage.prompt_tokens > 0  # the turn's real token counts


async def test_streaming_completion(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="Streaming works fine.", chunk=4))
    async with gateway_harness(tmp_path, llm) as h:
        api = client(h, await h.pair())
        stream = await api.chat.completions.create(model="edge", messages=[{"role": "user", "content": "hi"}],
                                                   stream=True, stream_options={"include_usage": True})
        chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "Streaming works fine." and len(chunks) > 4
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens > 0


async def test_a_conversation_continues_its_own_session(tmp_path, llm: ScriptedLLM):
    llm.script("Hi Ada.", "You said your name is Ada.", "Hello stranger.")
    async with gateway_harness(tmp_path, llm) as h:
        api = client(h, await h.pair())
        first = [{"role": "user", "content": "I am Ada"}]
        await api.chat.completions.create(model="edge", messages=first)
        follow_up = [*first, {"role": "assistant", "content": "Hi Ada."}, {"role": "user", "content": "who am I?"}]
        await api.chat.completions.create(model="edge", messages=follow_up)
        await api.chat.completions.create(model="edge", messages=[{"role": "user", "content": "hello"}])
    second, third = llm.chats()[1]["messages"], llm.chats()[2]["messages"]
    assert [m["content"] for m in second[1:]] == ["I am Ada", "Hi Ada.", "who am I?"]  # edge's own history
    assert [m["role"] for m in third] == ["system", "user"]  # another conversation, another session


async def test_errors_come_back_as_openai_errors(tmp_path, llm: ScriptedLLM):
    async with gateway_harness(tmp_path, llm) as h:
        with pytest.raises(openai.AuthenticationError):
            await client(h, "not-a-token").chat.completions.create(model="edge", messages=[{"role": "user", "content": "x"}])
        with pytest.raises(openai.BadRequestError, match="role"):
            await client(h, await h.pair()).chat.completions.create(model="edge", messages=[{"role": "system", "content": "x"}])
