"""Provider behaviour at the wire: actionable errors, retries, mid-stream failures, fallbacks, API keys."""

from __future__ import annotations

import socket

import pytest

from edge.config import PrimaryProviderConfig
from edge.errors import ModelNotFound, ProviderError, ProviderUnavailable
from edge.providers.base import Done, FallbackChain, TextDelta, ToolCalls
from edge.providers.ollama import OllamaProvider
from edge.providers.openai import OpenAIProvider
from tests.conftest import Recorder, open_runtime
from tests.fakes.llm_server import ScriptedLLM, Step

MESSAGES = [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ollama(url: str, **overrides) -> OllamaProvider:
    return OllamaProvider(PrimaryProviderConfig(**{"base_url": url, "model": "test-model", "max_retries": 2, **overrides}))


def openai(url: str, key: str | None = None, **overrides) -> OpenAIProvider:
    settings = {"kind": "openai", "base_url": url, "model": "test-model", "max_retries": 2, **overrides}
    return OpenAIProvider(PrimaryProviderConfig(**settings), key)


async def collect(provider, tools=()) -> list:
    try:
        return [e async for e in provider.chat(MESSAGES, list(tools), num_ctx=4096)]
    finally:
        await provider.close()


async def test_connection_refused_names_the_url_and_how_to_start_ollama():
    url = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(ProviderUnavailable) as caught:
        await collect(ollama(url, max_retries=0))
    assert url in str(caught.value) and "connection refused" in str(caught.value) and "ollama serve" in str(caught.value)


async def test_connection_refused_is_not_retried(caplog):
    with pytest.raises(ProviderUnavailable):
        await collect(ollama(f"http://127.0.0.1:{free_port()}", max_retries=5))
    assert "retrying" not in caplog.text  # nothing listens: waiting would only delay the answer


async def test_missing_model_says_ollama_pull(llm: ScriptedLLM):
    provider = ollama(llm.ollama_url)
    provider.use_model("llama3.2:3b")
    with pytest.raises(ModelNotFound, match=r"ollama pull llama3\.2:3b"):
        await collect(provider)


@pytest.mark.parametrize("status", [429, 503])
async def test_busy_server_is_retried_with_backoff(llm: ScriptedLLM, status):
    llm.script(Step(status=status, error="busy", retry_after=0.05), "after the wait")
    events = await collect(ollama(llm.ollama_url))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "after the wait"
    assert len(llm.chats()) == 2


async def test_persistent_503_gives_up_with_a_clear_error(llm: ScriptedLLM):
    llm.script(*[Step(status=503, error="overloaded", retry_after=0.01)] * 3)
    with pytest.raises(ProviderUnavailable, match=r"busy or failing.*503.*overloaded"):
        await collect(ollama(llm.ollama_url))
    assert len(llm.chats()) == 3  # the first try and max_retries=2


async def test_connection_dropped_before_any_text_is_retried(llm: ScriptedLLM):
    llm.script(Step(drop=True), "second try")
    events = await collect(openai(llm.openai_url))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "second try"


async def test_connection_dropped_mid_answer_is_not_replayed(llm: ScriptedLLM):
    llm.script(Step(text="half an ans", drop=True), "should never be sent")
    got = []
    with pytest.raises(ProviderUnavailable, match=r"before the answer was complete|dropped"):
        async for event in ollama(llm.ollama_url).chat(MESSAGES, [], num_ctx=4096):
            got.append(event)
    assert "".join(e.text for e in got) == "half an ans" and len(llm.chats()) == 1


@pytest.mark.parametrize("make", [lambda llm: ollama(llm.ollama_url), lambda llm: openai(llm.openai_url)])
async def test_error_after_http_200_is_raised(llm: ScriptedLLM, make):
    llm.script(Step(text="partial", midstream_error=True, error="CUDA out of memory"))
    with pytest.raises(ProviderError, match=r"mid-answer: .*CUDA out of memory"):
        await collect(make(llm))


@pytest.mark.parametrize("llama_cpp_style", [False, True])
async def test_openai_tool_call_arguments_are_reassembled_from_pieces(llm: ScriptedLLM, llama_cpp_style):
    llm.script(Step(tool_calls=[{"name": "gpio_write", "arguments": {"name": "porch light", "state": "on"}},
                                {"name": "time_now", "arguments": {}}], llama_cpp_style=llama_cpp_style))
    events = await collect(openai(llm.openai_url))
    calls = next(e for e in events if isinstance(e, ToolCalls)).calls
    assert [(c.id, c.name, c.arguments) for c in calls] == [
        ("call_0", "gpio_write", {"name": "porch light", "state": "on"}), ("call_1", "time_now", {})]
    assert isinstance(events[-1], Done) and events[-1].reason == "tool_calls"


async def test_openai_api_key_is_sent_as_bearer_and_never_logged(llm: ScriptedLLM, tmp_path, monkeypatch, caplog):
    seen = []
    llm.responder = lambda body: Step(text="fine")
    monkeypatch.setenv("TEST_LLM_KEY", "sk-test-abcdefghijklmnop1234")
    original = llm._openai_chat

    async def spy(request):
        seen.append(request.headers.get("Authorization"))
        return await original(request)

    llm._openai_chat = spy
    llm.stop()
    llm.start()  # routes are bound at start: restart with the spy in place
    async with open_runtime(tmp_path, llm, kind="openai", provider={"api_key_env": "TEST_LLM_KEY"}) as rt:
        session = await rt.store.current_session("t")
        result = await rt.agent.turn(session, "echo TEST_LLM_KEY=sk-test-abcdefghijklmnop1234", Recorder())
    assert seen == ["Bearer sk-test-abcdefghijklmnop1234"] and result.text == "fine"
    assert "sk-test-abcdefghijklmnop1234" not in caplog.text


async def test_fallback_provider_answers_when_the_primary_is_down(llm: ScriptedLLM):
    chain = FallbackChain([ollama(f"http://127.0.0.1:{free_port()}", max_retries=0), openai(llm.openai_url)])
    events = await collect(chain)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "ok"
    assert chain.active.config.kind == "openai"


async def test_fallbacks_from_config(tmp_path, llm: ScriptedLLM):
    down = f"http://127.0.0.1:{free_port()}"
    fallback = {"kind": "openai", "base_url": llm.openai_url, "model": "test-model"}
    async with open_runtime(tmp_path, None, provider={"base_url": down, "max_retries": 0, "fallbacks": [fallback]}) as rt:
        session = await rt.store.current_session("t")
        result = await rt.agent.turn(session, "hi", Recorder())
    assert result.text == "ok" and result.error is None


async def test_a_provider_failure_becomes_a_plain_answer_not_a_traceback(tmp_path):
    url = f"http://127.0.0.1:{free_port()}"
    async with open_runtime(tmp_path, None, provider={"base_url": url, "max_retries": 0}) as rt:
        session = await rt.store.current_session("t")
        sink = Recorder()
        result = await rt.agent.turn(session, "hi", sink)
        history = await rt.store.history(session)
    assert result.error and sink.text.startswith("Sorry, I could not get an answer: cannot reach Ollama")
    assert history[0] == {"role": "user", "content": "hi"}  # the accepted message is kept


async def test_garbage_from_the_server_is_a_clear_protocol_error(llm: ScriptedLLM):
    async def garbage(request):
        from aiohttp import web

        return web.Response(text="<html>proxy error</html>\n", content_type="application/x-ndjson")

    llm._ollama_chat = garbage
    llm.stop()
    llm.start()
    with pytest.raises(ProviderError, match="not JSON"):
        await collect(ollama(llm.ollama_url))
