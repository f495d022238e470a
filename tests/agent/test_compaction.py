"""History compaction: a long session is folded into a summary by token budget, facts flushed to memory first."""

from __future__ import annotations

from edge.agent.compaction import choose_cut, parse_facts, transcript
from edge.agent.context import message_tokens
from tests.conftest import Recorder, open_runtime
from tests.fakes.llm_server import ScriptedLLM, Step

FILLER = "The weather report for the garden says mild and dry, with a light breeze from the west. " * 3
SUMMARY = "The user asked about the garden weather several times and switched the porch light on."


def answering(flush: Step | None = None, summary: Step | None = None):
    """A model that answers chat turns at length, and the flush and summary requests as scripted."""
    def respond(body: dict) -> Step:
        system = body["messages"][0]["content"]
        if system.startswith("You keep the long-term memory"):
            return flush or Step(text="Here you go:\n- Ada's dog is called Rex.\n- The porch light is on GPIO 17.")
        if system.startswith("You summarise conversations"):
            return summary or Step(text=SUMMARY)
        return Step(text=FILLER)
    return respond


async def talk(rt, session: str, count: int, start: int = 0) -> None:
    for number in range(start, start + count):
        await rt.agent.turn(session, f"Question {number}: how is the garden weather today?", Recorder())


def roles_are_paired(messages: list[dict]) -> bool:
    """Every tool result follows the assistant message that asked for it."""
    asked: set[str] = set()
    for message in messages:
        if message.get("tool_calls"):
            asked = {c.get("id") or c["function"]["name"] for c in message["tool_calls"]}
        elif message["role"] == "tool" and not asked:
            return False
    return True


async def test_a_long_session_is_compacted_by_tokens_with_a_memory_flush(tmp_path, llm: ScriptedLLM):
    llm.responder = answering()
    async with open_runtime(tmp_path, llm, memory={"history_budget_tokens": 600}) as rt:
        session = await rt.store.current_session("test")
        await talk(rt, session, 8)
        await rt.agent.settle()
        live = await rt.store.history(session)
        total = await rt.db.call(lambda con: con.execute("SELECT count(*) FROM messages").fetchone()[0])
        remembered = [m.content for m in await rt.memories.all()]
        await rt.agent.turn(session, "And tomorrow?", Recorder())
        last_request = llm.chats()[-1]["messages"]
    assert total == 16 and len(live) < 16  # folded away, never deleted
    assert sum(message_tokens(m) for m in live) <= 600
    assert remembered == ["Ada's dog is called Rex.", "The porch light is on GPIO 17."]  # bullets only, as daily notes
    assert SUMMARY in last_request[0]["content"]  # the summary rides in the system prompt
    assert last_request[-1] == {"role": "user", "content": "And tomorrow?"}
    assert last_request[1]["role"] == "user"  # history resumes at a turn's start


async def test_summary_survives_a_restart_and_repeated_facts_are_not_stored_twice(tmp_path, llm: ScriptedLLM):
    llm.responder = answering()
    sections = {"memory": {"history_budget_tokens": 600}}
    async with open_runtime(tmp_path, llm, **sections) as rt:
        session = await rt.store.current_session("test")
        await talk(rt, session, 8)
        await rt.agent.settle()
    async with open_runtime(tmp_path, llm, **sections) as rt:
        assert await rt.store.summary(session) == SUMMARY
        await talk(rt, session, 8, start=8)
        await rt.agent.settle()
        remembered = await rt.memories.all()
        flushes = [b for b in llm.chats() if b["messages"][0]["content"].startswith("You keep the long-term")]
        summaries = [b for b in llm.chats() if b["messages"][0]["content"].startswith("You summarise")]
    assert len(flushes) >= 2 and len(remembered) == 2
    assert "Summary of what came before: " + SUMMARY in summaries[-1]["messages"][-1]["content"]


async def test_when_the_model_fails_the_recent_turns_are_kept(tmp_path, llm: ScriptedLLM):
    llm.responder = answering(flush=Step(status=500, error="out of memory"), summary=Step(status=500, error="oom"))
    async with open_runtime(tmp_path, llm, memory={"history_budget_tokens": 600}) as rt:
        session = await rt.store.current_session("test")
        await talk(rt, session, 8)
        await rt.agent.settle()
        live = await rt.store.history(session)
        summary = await rt.store.summary(session)
        result = await rt.agent.turn(session, "Still there?", Recorder())
    assert summary == "" and 0 < len(live) < 16 and live[0]["role"] == "user"
    assert result.text.startswith("The weather report") and not result.error


async def test_tool_calls_stay_paired_with_their_results(tmp_path, llm: ScriptedLLM):
    def respond(body: dict) -> Step:
        last = body["messages"][-1]
        system = body["messages"][0]["content"]
        if system.startswith(("You keep", "You summarise")):
            return Step(text="- nothing" if system.startswith("You keep") else "They asked the time a lot.")
        if last["role"] == "user" and body.get("tools"):
            return Step(tool_calls=[{"name": "time_now", "arguments": {"timezone": "UTC"}}])
        return Step(text=FILLER)

    llm.responder = respond
    async with open_runtime(tmp_path, llm, memory={"history_budget_tokens": 700}) as rt:
        session = await rt.store.current_session("test")
        for number in range(8):
            await rt.agent.turn(session, f"What time is it now, number {number}?", Recorder())
            await rt.agent.settle()
            live = await rt.store.history(session)
            assert live[0]["role"] == "user" and roles_are_paired(live)
        compacted = await rt.db.call(lambda con: con.execute("SELECT count(*) FROM messages WHERE compacted").fetchone()[0])
    assert compacted > 0


def test_the_cut_is_before_a_user_message_and_never_takes_the_latest():
    turn = [{"role": "user", "content": "x" * 200}, {"role": "assistant", "content": "", "tool_calls": [
        {"id": "1", "name": "time_now", "arguments": {}}]}, {"role": "tool", "content": "noon", "name": "time_now"},
        {"role": "assistant", "content": "y" * 200}]
    messages = turn * 4
    cut = choose_cut(messages, keep_tokens=150)
    assert cut == 12 and messages[cut]["role"] == "user"  # only the latest turn fits, and it is kept whole
    assert choose_cut(messages, keep_tokens=10_000) == 0
    assert choose_cut(messages[:1], keep_tokens=1) == 0  # a lone huge message is never folded away


def test_facts_are_only_bullet_lines_and_the_transcript_fits():
    assert parse_facts("Sure! Here are the facts:\n- Rex is a dog.\n* Ada likes tea.\nNONE\n-\n") == [
        "Rex is a dog.", "Ada likes tea."]
    assert parse_facts("NONE") == []
    long = [{"role": "user", "content": "word " * 2000}, {"role": "assistant", "content": "", "tool_calls": [
        {"name": "gpio_write", "arguments": {"name": "porch", "value": "on"}}]}]
    text = transcript(long, budget_tokens=100)
    assert len(text) <= 351 and text.endswith('Assistant used gpio_write({"name":"porch","value":"on"})')
