"""The agent loop against the scripted server: every small-model failure mode of notes/ollama.md is handled."""

from __future__ import annotations

import asyncio
import json

import pytest

from edge.agent.events import Notice, ToolActivity
from edge.agent.turn import EMPTY_ANSWER
from tests.conftest import Recorder, open_runtime
from tests.fakes.llm_server import FakeModel, ScriptedLLM, Step

KINDS = ["ollama", "openai"]


def tool_names(body: dict) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools") or []]


async def turn(rt, text: str, approver=None) -> tuple[object, Recorder]:
    sink = Recorder()
    session = await rt.store.current_session("test")
    return await rt.agent.turn(session, text, sink, approver), sink


@pytest.mark.parametrize("kind", KINDS)
async def test_plain_answer_streams_in_pieces(tmp_path, llm: ScriptedLLM, kind):
    llm.script(Step(text="Hello there, how can I help?", chunk=4))
    async with open_runtime(tmp_path, llm, kind=kind) as rt:
        result, sink = await turn(rt, "hi")
    assert result.text == "Hello there, how can I help?"
    assert len(sink.events) > 3  # streamed as deltas, not one block
    assert sink.text == result.text


@pytest.mark.parametrize("kind", KINDS)
async def test_native_tool_call_runs_and_result_goes_back(tmp_path, llm: ScriptedLLM, kind):
    llm.script(Step(tool_calls=[{"name": "time_now", "arguments": {"timezone": "Europe/Paris"}}]), "It is noon.")
    async with open_runtime(tmp_path, llm, kind=kind) as rt:
        result, sink = await turn(rt, "what time is it in Paris?")
        audit = await rt.store.audit_trail()
    assert result.text == "It is noon." and result.tool_calls == 1
    second = llm.chats()[1]["messages"]
    tool_message = second[-1]
    assert tool_message["role"] == "tool" and ("CET" in tool_message["content"] or "CEST" in tool_message["content"])
    if kind == "ollama":
        assert tool_message["tool_name"] == "time_now"
        assert second[-2]["tool_calls"][0]["function"]["arguments"] == {"timezone": "Europe/Paris"}
    else:
        assert tool_message["tool_call_id"] == "call_0"
        assert json.loads(second[-2]["tool_calls"][0]["function"]["arguments"]) == {"timezone": "Europe/Paris"}
    assert [(a.tool, a.decision, a.ok) for a in audit] == [("time_now", "allowed", True)]
    assert [e.name for e in sink.of(ToolActivity)] == ["time_now", "time_now"]


@pytest.mark.parametrize("written", [
    '{"name": "time_now", "arguments": {}}',
    '<tool_call>\n{"name": "time_now", "arguments": {}}\n</tool_call>',
    '```json\n{"name": "time_now", "parameters": {}}\n```',
    "[time_now()]",
])
async def test_tool_call_written_as_text_is_executed_not_shown(tmp_path, llm: ScriptedLLM, written):
    llm.script(Step(text=written), "Done checking the time.")
    async with open_runtime(tmp_path, llm) as rt:
        result, sink = await turn(rt, "time?")
    assert result.tool_calls == 1
    assert result.text == "Done checking the time."
    assert "time_now" not in sink.text and "{" not in sink.text  # the raw call never reached the user


async def test_text_that_mentions_json_is_not_a_call(tmp_path, llm: ScriptedLLM):
    llm.script('Config looks like {"name": "porch", "pin": 17}.')
    async with open_runtime(tmp_path, llm) as rt:
        result, _ = await turn(rt, "show me")
    assert result.tool_calls == 0 and "porch" in result.text


async def test_num_ctx_always_sent_and_sized_from_model_and_prompt(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("big", context_length=131072))
    llm.script("a", "b")
    async with open_runtime(tmp_path, llm, provider={"model": "big", "num_ctx": 16384}) as rt:
        await turn(rt, "hi")
        await turn(rt, "x " * 20000)  # a long message needs a larger context
    first, second = (c["options"]["num_ctx"] for c in llm.chats())
    assert first == 4096  # small prompt: the smallest step
    assert second == 16384  # large prompt: grown, but never past the configured bound


async def test_context_never_exceeds_the_models_maximum(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("tiny-ctx", context_length=2048))
    async with open_runtime(tmp_path, llm, provider={"model": "tiny-ctx"}) as rt:
        await turn(rt, "hi")
    assert llm.chats()[0]["options"]["num_ctx"] == 2048


async def test_truncation_by_server_is_detected_and_reported(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("cuts", reads_at_most=300))
    async with open_runtime(tmp_path, llm, provider={"model": "cuts"}) as rt:
        result, sink = await turn(rt, "please read all this: " + "lorem ipsum " * 400)
    assert any("cutting the context" in n.text for n in sink.of(Notice))
    assert result.notices


async def test_model_without_tools_runs_with_tools_described_in_prompt(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("notools", tools=False))
    llm.script('<tool_call>{"name": "time_now", "arguments": {}}</tool_call>', "It is late.")
    async with open_runtime(tmp_path, llm, provider={"model": "notools"}) as rt:
        result, _ = await turn(rt, "time?")
    first, second = llm.chats()
    assert "tools" not in first  # never sent: the server would answer 400
    assert "time_now(" in first["messages"][0]["content"]  # described in the system prompt instead
    assert "<tool_result" in second["messages"][-1]["content"]  # results come back as text
    assert result.text == "It is late." and result.tool_calls == 1


async def test_400_does_not_support_tools_falls_back_to_text_tools(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("old", tools=False))
    async with open_runtime(tmp_path, llm, provider={"model": "old", "kind": "openai", "base_url": llm.openai_url}) as rt:
        result, _ = await turn(rt, "hi")  # the OpenAI side has no capability probe: it learns from the 400
    chats = llm.chats()
    assert "tools" in chats[0] and "tools" not in chats[1]
    assert result.text == "ok" and result.error is None


async def test_think_false_by_default_and_empty_answer_is_asked_again(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("qwen3:1.7b", thinking=True))
    llm.script(Step(thinking="Let me think about this at length...", text=""), "Forty-two.")
    async with open_runtime(tmp_path, llm, provider={"model": "qwen3:1.7b"}) as rt:
        result, _ = await turn(rt, "answer?")
    assert llm.chats()[0]["think"] is False
    assert result.text == "Forty-two."
    assert "empty" in llm.chats()[1]["messages"][-1]["content"]


async def test_empty_answer_twice_gives_a_clear_message(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text=""), Step(text=""))
    async with open_runtime(tmp_path, llm) as rt:
        result, sink = await turn(rt, "answer?")
    assert result.text == EMPTY_ANSWER and sink.text == EMPTY_ANSWER


async def test_done_reason_length_is_reported_as_cut_off(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="The first part of a long", done_reason="length"))
    async with open_runtime(tmp_path, llm) as rt:
        result, sink = await turn(rt, "tell me everything")
    assert result.text == "The first part of a long"
    assert any("cut off" in n.text for n in sink.of(Notice))


@pytest.mark.parametrize("kind", KINDS)
async def test_invalid_arguments_get_one_exact_repair_message(tmp_path, llm: ScriptedLLM, kind):
    llm.script(Step(tool_calls=[{"name": "file_read", "arguments": {"file": "notes.md"}}]),
               Step(tool_calls=[{"name": "file_read", "arguments": {"path": "AGENTS.md"}}]),
               "Read it.")
    async with open_runtime(tmp_path, llm, kind=kind) as rt:
        result, _ = await turn(rt, "read my notes")
    repair = llm.chats()[1]["messages"][-1]["content"]
    assert "unknown argument 'file'" in repair and "missing required argument 'path'" in repair
    assert result.text == "Read it." and result.tool_calls == 2


async def test_hallucinated_tool_name_is_told_the_real_names(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "get_weather", "arguments": {"city": "Oslo"}}]), "I cannot check the weather.")
    async with open_runtime(tmp_path, llm) as rt:
        result, _ = await turn(rt, "weather?")
        audit = await rt.store.audit_trail()
    told = llm.chats()[1]["messages"][-1]["content"]
    assert "no tool named 'get_weather'" in told and "time_now" in told
    assert result.text == "I cannot check the weather."
    assert audit[0].tool == "get_weather" and audit[0].decision == "invalid"


async def test_wrongly_nested_arguments_are_unwrapped(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "time_now", "arguments": {"arguments": {"timezone": "UTC"}}}]), "Done.")
    async with open_runtime(tmp_path, llm) as rt:
        result, _ = await turn(rt, "time?")
    told = llm.chats()[1]["messages"][-1]["content"]
    assert "UTC" in told and "Error" not in told and result.text == "Done."


async def test_second_invalid_call_stops_tools_and_still_answers(tmp_path, llm: ScriptedLLM):
    bad = Step(tool_calls=[{"name": "file_read", "arguments": {"wrong": 1}}])
    llm.script(bad, Step(tool_calls=[{"name": "file_read", "arguments": {"still_wrong": 2}}]), "Sorry, I could not read it.")
    async with open_runtime(tmp_path, llm) as rt:
        result, _ = await turn(rt, "read")
    last = llm.chats()[-1]
    assert "tools" not in last and "No more tools" in last["messages"][-1]["content"]
    assert result.text == "Sorry, I could not read it."


async def test_identical_calls_in_one_turn_run_once(tmp_path, llm: ScriptedLLM):
    call = {"name": "file_list", "arguments": {"path": "."}}
    llm.script(Step(tool_calls=[call, call]), "Listed.")
    async with open_runtime(tmp_path, llm) as rt:
        result, _ = await turn(rt, "list")
        audit = await rt.store.audit_trail()
    assert result.tool_calls == 1 and len(audit) == 1


async def test_repeated_failing_call_stops_early_with_a_final_answer(tmp_path, llm: ScriptedLLM):
    failing = Step(tool_calls=[{"name": "file_read", "arguments": {"path": "missing.txt"}}])
    llm.responder = lambda body: failing if body.get("tools") else Step(text="The file does not exist.")
    async with open_runtime(tmp_path, llm, agent={"max_tool_iterations": 10}) as rt:
        result, _ = await turn(rt, "read missing.txt")
        audit = await rt.store.audit_trail()
    assert len(llm.chats()) == 3  # call, repeat (not run again), final answer without tools
    assert len(audit) == 1 and not audit[0].ok
    assert result.text == "The file does not exist."


async def test_iteration_cap_ends_with_an_answer_without_tools(tmp_path, llm: ScriptedLLM):
    counter = iter(range(100))
    llm.responder = lambda body: (Step(tool_calls=[{"name": "time_now", "arguments": {"timezone": ["UTC", "Europe/Oslo", "Asia/Tokyo"][next(counter) % 3]}}])
                                  if body.get("tools") else Step(text="Here is what I found."))
    async with open_runtime(tmp_path, llm, agent={"max_tool_iterations": 3}) as rt:
        result, _ = await turn(rt, "loop forever")
    assert len(llm.chats()) == 4 and "tools" not in llm.chats()[-1]
    assert "limit of 3 tool rounds" in llm.chats()[-1]["messages"][-1]["content"]
    assert result.text == "Here is what I found."


async def test_final_answer_that_is_still_a_tool_call_becomes_an_explanation(tmp_path, llm: ScriptedLLM):
    call = Step(tool_calls=[{"name": "time_now", "arguments": {}}])
    llm.script(call, call, Step(text='{"name": "time_now", "arguments": {}}'))
    async with open_runtime(tmp_path, llm) as rt:
        result, sink = await turn(rt, "time")
    assert result.text.startswith("I could not complete that:") and "{" not in sink.text


async def test_small_model_mode_sends_fewer_tools_and_short_descriptions(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("smollm:135m", parameters=135_000_000))
    async with open_runtime(tmp_path, llm) as rt:
        await turn(rt, "hello")
    async with open_runtime(tmp_path, llm, provider={"model": "smollm:135m"}) as rt:
        await turn(rt, "hello")
    normal, small = llm.chats()
    assert len(tool_names(small)) < len(tool_names(normal))
    assert "shell" in tool_names(normal) and "shell" not in tool_names(small)
    assert len(json.dumps(small)) < 6000
    assert all("description" not in p for t in small["tools"] for p in t["function"]["parameters"]["properties"].values())


async def test_prompt_prefix_is_byte_stable_across_turns(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm) as rt:
        await turn(rt, "one")
        await turn(rt, "two")
    first, second = llm.chats()
    assert json.dumps(first["messages"][0]) == json.dumps(second["messages"][0])
    assert json.dumps(first["tools"]) == json.dumps(second["tools"])
    assert second["messages"][1]["content"] == "one"  # history follows the stable prefix


async def test_keep_alive_is_sent_as_configured(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, provider={"keep_alive": "-1"}) as rt:
        await turn(rt, "hi")
    async with open_runtime(tmp_path, llm, provider={"keep_alive": "10m"}) as rt:
        await turn(rt, "hi")
    assert [c["keep_alive"] for c in llm.chats()] == [-1, "10m"]


async def test_concurrent_turns_reach_a_local_model_one_at_a_time(tmp_path, llm: ScriptedLLM):
    llm.responder = lambda body: Step(text="slow answer", delay=0.02)
    async with open_runtime(tmp_path, llm) as rt:
        a = await rt.store.current_session("a")
        b = await rt.store.current_session("b")
        await asyncio.gather(*(rt.agent.turn(s, "hi", Recorder()) for s in (a, b, a)))
    assert llm.max_in_flight == 1 and len(llm.chats()) == 3


async def test_cancelled_turn_keeps_what_was_said(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="a long answer that never ends " * 20, delay=0.05))
    async with open_runtime(tmp_path, llm) as rt:
        session = await rt.store.current_session("test")
        streaming = asyncio.Event()

        async def sink(event):
            streaming.set()

        task = asyncio.create_task(rt.agent.turn(session, "talk", sink))
        await asyncio.wait_for(streaming.wait(), 10)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        history = await rt.store.history(session)
    assert [m["role"] for m in history] == ["user", "assistant"]
    assert history[-1]["content"].endswith("[stopped]")


async def test_history_persists_and_keeps_tool_pairs(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "time_now", "arguments": {}}]), "Noon.", "You asked about the time.")
    async with open_runtime(tmp_path, llm) as rt:
        await turn(rt, "time?")
    async with open_runtime(tmp_path, llm) as rt:  # a restart
        await turn(rt, "what did I ask?")
    roles = [m["role"] for m in llm.chats()[-1]["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "assistant", "user"]


async def test_token_usage_recorded_per_turn(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="fine", prompt_eval_count=123))
    async with open_runtime(tmp_path, llm) as rt:
        result, _ = await turn(rt, "how are you")
        turns, prompt, completion = await rt.store.usage_totals()
    assert result.prompt_tokens == 123 and (turns, prompt) == (1, 123) and completion >= 1
