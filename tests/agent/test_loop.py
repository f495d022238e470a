"""The agent loop on the bus: order within a session, a bound on turns in flight, interrupts, the rate brake."""

from __future__ import annotations

import asyncio
import contextlib

from edge.agent.loop import AgentLoop
from edge.bus import Bus, InboundMessage, OutboundMessage
from edge.metrics import Counters
from tests.conftest import open_runtime
from tests.fakes.llm_server import ScriptedLLM, Step


class Collector:
    name = "test"

    def __init__(self) -> None:
        self.sent: list[OutboundMessage] = []
        self.finals: asyncio.Queue[OutboundMessage] = asyncio.Queue()
        self.streaming = asyncio.Event()

    async def send(self, message: OutboundMessage) -> None:
        self.sent.append(message)
        if message.kind == "delta":
            self.streaming.set()
        if message.kind == "final":
            self.finals.put_nowait(message)

    async def next_final(self) -> OutboundMessage:
        return await asyncio.wait_for(self.finals.get(), 10)


@contextlib.asynccontextmanager
async def running(tmp_path, llm, **sections):  # type: ignore[no-untyped-def]
    async with open_runtime(tmp_path, llm, **sections) as rt:
        bus, channel, counters = Bus(), Collector(), Counters()
        bus.register(channel)
        task = asyncio.create_task(AgentLoop(bus, rt, rt.config.agent, counters).run(lambda: None))
        try:
            yield bus, channel, counters, rt
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def message(text: str, session: str = "s1", sender: str = "alice") -> InboundMessage:
    return InboundMessage("test", sender, session, text)


async def test_one_session_runs_in_order(tmp_path, llm: ScriptedLLM):
    llm.responder = lambda body: Step(text="re: " + body["messages"][-1]["content"], delay=0.01)
    async with running(tmp_path, llm) as (bus, channel, _, _rt):
        for i in range(3):
            bus.publish(message(f"m{i}"))
        finals = [await channel.next_final() for _ in range(3)]
    assert [f.text for f in finals] == ["re: m0", "re: m1", "re: m2"]
    assert [c["messages"][-1]["content"] for c in llm.chats()] == ["m0", "m1", "m2"]


async def test_turns_in_flight_are_bounded(tmp_path, llm: ScriptedLLM):
    llm.responder = lambda body: Step(text="done", delay=0.02)
    async with running(tmp_path, llm, agent={"max_concurrent_turns": 1}, provider={"kind": "openai",
                                                                                   "base_url": llm.openai_url}) as (bus, channel, _, _rt):
        for i in range(4):
            bus.publish(message("hi", session=f"s{i}"))
        for _ in range(4):
            await channel.next_final()
    assert llm.max_in_flight == 1


async def test_a_new_message_interrupts_when_configured(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="a very long story " * 30, delay=0.03), "short answer")
    async with running(tmp_path, llm, agent={"interrupt": True}) as (bus, channel, _, _rt):
        bus.publish(message("tell me a story"))
        await asyncio.wait_for(channel.streaming.wait(), 10)
        bus.publish(message("actually, stop"))
        first, second = await channel.next_final(), await channel.next_final()
    assert first.text == "[stopped]" and first.data["stopped"] and second.text == "short answer"


async def test_stop_command_stops_the_running_turn(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="endless " * 100, delay=0.03))
    async with running(tmp_path, llm) as (bus, channel, _, _rt):
        bus.publish(message("talk"))
        await asyncio.wait_for(channel.streaming.wait(), 10)
        bus.publish(message("/stop"))
        replies = {(await channel.next_final()).text for _ in range(2)}
    assert replies == {"Stopped.", "[stopped]"}


async def test_rate_brake_tells_a_runaway_sender_to_slow_down(tmp_path, llm: ScriptedLLM):
    async with running(tmp_path, llm, agent={"sender_messages_per_minute": 2}) as (bus, channel, counters, _rt):
        for i in range(3):
            bus.publish(message(f"m{i}"))
        bus.publish(message("from bob", sender="bob"))
        finals = [await channel.next_final() for _ in range(4)]
    braked = [f for f in finals if "faster than I can take" in f.text]
    assert len(braked) == 1 and braked[0].reply_to and counters.messages_rejected_total == 1
    assert len(llm.chats()) == 3  # alice twice, bob once


async def test_disk_full_is_told_to_the_user_and_the_loop_survives(tmp_path, llm: ScriptedLLM):
    async with running(tmp_path, llm) as (bus, channel, _, rt):
        bus.publish(message("first"))
        await channel.next_final()
        db = rt.db  # the next message cannot be stored: SQLite answers SQLITE_FULL, as on a full SD card
        pages = await db.call(lambda con: con.execute("PRAGMA page_count").fetchone()[0])
        await db.call(lambda con: con.execute(f"PRAGMA max_page_count = {pages}"))
        bus.publish(message("x" * 50_000))
        full = await channel.next_final()
        await db.call(lambda con: con.execute("PRAGMA max_page_count = 1000000"))
        bus.publish(message("and now?"))
        after = await channel.next_final()
    assert "could not take that message" in full.text and "full" in full.text
    assert after.text == "ok"
