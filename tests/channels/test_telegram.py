"""The Telegram channel against a fake Bot API: pairing, streaming edits, buttons, splitting, restarts, faults."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import subprocess
import sys

import pytest

from edge.agent.loop import AgentLoop
from edge.app import runtime
from edge.bus import Bus
from edge.channels.telegram import UNSUPPORTED, TelegramChannel
from edge.config import TelegramConfig
from edge.metrics import Counters
from edge.supervise import Health, supervise
from edge.tools.notify import notify_tools
from tests.conftest import edge_env, make_config, running
from tests.fakes.llm_server import ScriptedLLM, Step
from tests.fakes.telegram_server import TOKEN, FakeTelegram

OWNER = 1001


@contextlib.asynccontextmanager
async def bot(tmp_path, llm, fake: FakeTelegram, token: str = TOKEN, health: Health | None = None, **telegram):  # type: ignore[no-untyped-def]
    settings = {"api_base": fake.url, "allowed_users": (str(OWNER),), "edit_interval_s": 0.05, "poll_timeout_s": 1,
                **telegram}
    config = make_config(tmp_path, llm)
    config = dataclasses.replace(config, telegram=TelegramConfig(**settings))
    bus = Bus()
    async with runtime(config, notify_tools(bus, "telegram")) as rt:
        channel = TelegramChannel(config.telegram, token, bus, rt.db, backoff_s=0.01)
        health = health or Health()
        async with running(AgentLoop(bus, rt, config.agent, Counters()).run(lambda: None),
                           supervise("telegram", channel.run, health, first_delay=0.05)):
            yield channel, rt


async def says(fake: FakeTelegram, chat: int, text: str) -> str:
    return await fake.wait_for(lambda: next((t for t in fake.texts_to(chat) if text in t), None))


async def test_allowed_user_round_trip_streams_as_an_edited_draft(tmp_path, llm: ScriptedLLM):
    answer = "Good evening! The porch light is on and the greenhouse reads 21 degrees."
    llm.script(Step(text=answer, chunk=6, delay=0.03))
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_says(OWNER, "hi")
        await says(fake, OWNER, answer)
    assert fake.texts_to(OWNER) == [answer]  # one message, edited in place
    assert len(fake.sent("editMessageText", OWNER)) >= 2
    assert fake.sent("sendChatAction", OWNER)[0]["action"] == "typing"
    assert llm.chats()[0]["messages"][-1]["content"] == "hi"


async def test_unknown_sender_gets_a_code_and_reaches_the_agent_only_after_approval(tmp_path, llm: ScriptedLLM):
    stranger = 2002
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_says(stranger, "let me in", username="eve")
        greeting = await says(fake, stranger, "pairing code")
        code = greeting.split("edge pair approve ")[1].strip()
        assert llm.chats() == []  # never reached the agent
        env = edge_env(tmp_path, llm)
        approving = await asyncio.create_subprocess_exec(sys.executable, "-m", "edge", "pair", "approve", code, env=env,
                                                         cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        out, _ = await asyncio.wait_for(approving.communicate(), 30)
        assert approving.returncode == 0 and "2002 (@eve)" in out.decode()
        await says(fake, stranger, "You are paired now")
        await fake.user_says(stranger, "hello again", username="eve")
        await says(fake, stranger, "ok")
    assert llm.chats()[0]["messages"][-1]["content"] == "hello again"


async def test_owner_can_approve_from_an_allowed_chat_and_wrong_codes_fail(tmp_path, llm: ScriptedLLM):
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_says(3003, "hi")
        code = (await says(fake, 3003, "pairing code")).split("edge pair approve ")[1].strip()
        await fake.user_says(OWNER, "/approve WRONGCODE")
        await says(fake, OWNER, "No pending code like that.")
        await fake.user_says(OWNER, f"/approve {code.lower()}")
        await says(fake, OWNER, "Approved 3003.")
        await says(fake, 3003, "You are paired now")


async def test_an_empty_allowlist_lets_nobody_in(tmp_path, llm: ScriptedLLM):
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake, allowed_users=()):
        await fake.user_says(OWNER, "hi")
        await says(fake, OWNER, "pairing code")
    assert llm.chats() == []


async def test_approval_by_button_resumes_the_turn_and_only_the_asker_may_press(tmp_path, llm: ScriptedLLM):
    write = {"name": "file_write", "arguments": {"path": "plants.md", "content": "water at 7"}}
    llm.script(Step(tool_calls=[write]), "Noted.")
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake) as (_, rt):
        await fake.user_says(OWNER, "note: water at 7")
        question = await fake.wait_for(lambda: next((p for p in fake.sent("sendMessage", OWNER) if "reply_markup" in p), None))
        buttons = question["reply_markup"]["inline_keyboard"][0]
        assert [b["text"] for b in buttons] == ["Approve", "Deny", "Always"]
        message_id = max(m for (chat, m) in fake.messages if chat == OWNER)
        await fake.user_presses(4004, OWNER, message_id, buttons[0]["callback_data"])  # someone else
        await fake.wait_for(lambda: fake.sent("answerCallbackQuery"))
        await fake.user_presses(OWNER, OWNER, message_id, buttons[0]["callback_data"])
        await says(fake, OWNER, "Noted.")
        written = (rt.config.workspace / "plants.md").read_text()
    answers = [p["text"] for p in fake.sent("answerCallbackQuery")]
    assert answers == ["This question is not yours, or it has expired.", "Approved"] and written == "water at 7"


async def test_a_long_reply_is_split_at_paragraphs(tmp_path, llm: ScriptedLLM):
    paragraphs = [f"Paragraph {i}: " + "words " * 150 for i in range(10)]
    llm.script(Step(text="\n\n".join(paragraphs), chunk=2000))
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_says(OWNER, "tell me everything")
        await says(fake, OWNER, "Paragraph 9")
    texts = fake.texts_to(OWNER)
    assert len(texts) >= 3 and all(len(t) <= 4096 for t in texts)
    assert all(t.startswith("Paragraph") for t in texts)  # cut between paragraphs
    assert " ".join(" ".join(texts).split()) == " ".join(" ".join(paragraphs).split())


async def test_a_restart_neither_replays_nor_skips(tmp_path, llm: ScriptedLLM):
    llm.responder = lambda body: Step(text="re: " + body["messages"][-1]["content"])
    async with FakeTelegram() as fake:
        async with bot(tmp_path, llm, fake):
            await fake.user_says(OWNER, "first")
            await says(fake, OWNER, "re: first")
        await fake.user_says(OWNER, "while you were down")
        async with bot(tmp_path, llm, fake):
            await says(fake, OWNER, "re: while you were down")
            await fake.user_says(OWNER, "third")
            await says(fake, OWNER, "re: third")
    assert fake.texts_to(OWNER) == ["re: first", "re: while you were down", "re: third"]
    assert [c["messages"][-1]["content"] for c in llm.chats()] == ["first", "while you were down", "third"]


@pytest.mark.parametrize(("status", "description", "logged"), [
    (409, "Conflict: terminated by other getUpdates request", "another program is polling with this bot token"),
    (502, "Bad Gateway", "Telegram said 502: Bad Gateway; retrying"),
])
async def test_polling_faults_are_logged_clearly_and_polling_recovers(tmp_path, llm: ScriptedLLM, caplog, status,
                                                                      description, logged):
    async with FakeTelegram() as fake:
        fake.fail("getUpdates", status, description, times=3)
        async with bot(tmp_path, llm, fake):
            await fake.user_says(OWNER, "hi")
            await says(fake, OWNER, "ok")
    assert caplog.text.count(logged) == 3


async def test_429_waits_as_long_as_telegram_asks(tmp_path, llm: ScriptedLLM):
    async with FakeTelegram() as fake:
        fake.fail("sendMessage", 429, "Too Many Requests: retry after 1", retry_after=1)
        async with bot(tmp_path, llm, fake):
            await fake.user_says(OWNER, "hi")
            started = asyncio.get_running_loop().time()
            await fake.wait_for(lambda: fake.sent("editMessageText", OWNER) or len(fake.sent("sendMessage", OWNER)) > 1)
            waited = asyncio.get_running_loop().time() - started
            shown = fake.texts_to(OWNER)
    assert waited >= 0.9 and shown == ["ok"]  # sent once, after the wait


async def test_a_bad_token_marks_telegram_unhealthy_and_nothing_else(tmp_path, llm: ScriptedLLM):
    health = Health()
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake, token="1:wrong", health=health) as (channel, _):
        state = health.component("telegram")
        await asyncio.wait_for(state.settled.wait(), 5)
        assert state.status == "failed" and "bot token was refused" in state.last_error
        assert await channel.bus.notify("telegram", "x")  # the rest of the daemon (here: the bus) carries on
    assert "wrong" not in state.last_error  # never the token


async def test_photos_voice_and_files_get_a_polite_answer(tmp_path, llm: ScriptedLLM):
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_sends_photo(OWNER)
        await says(fake, OWNER, UNSUPPORTED)
    assert llm.chats() == []


async def test_formatting_falls_back_to_plain_text_when_telegram_rejects_it(tmp_path, llm: ScriptedLLM):
    llm.script("Use **bold *and** italic* carefully.", "Some **bold** and `code`.")
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_says(OWNER, "one")
        await says(fake, OWNER, "carefully")
        await fake.user_says(OWNER, "two")
        await says(fake, OWNER, "Some bold and code.")
    assert fake.texts_to(OWNER)[0] == "Use **bold *and** italic* carefully."  # crossed tags: shown as written
    formatted = fake.sent("sendMessage", OWNER) + fake.sent("editMessageText", OWNER)
    assert any(p.get("parse_mode") == "HTML" and "<b>bold</b>" in p["text"] for p in formatted)


async def test_commands_work_with_the_bot_name_attached(tmp_path, llm: ScriptedLLM):
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_says(OWNER, "/start")
        await says(fake, OWNER, "/new")
        await fake.user_says(OWNER, "/new@edge_test_bot")
        await says(fake, OWNER, "Started a new conversation.")
    assert llm.chats() == []


async def test_the_notify_tool_messages_the_owner(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "notify", "arguments": {"message": "Basement is wet!"}}]), "I told you.")
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake, notify_chat=str(OWNER)):
        await fake.user_says(OWNER, "tell me if the basement is wet")
        await says(fake, OWNER, "Basement is wet!")
        await says(fake, OWNER, "I told you.")


async def test_a_repeated_update_is_answered_once(tmp_path, llm: ScriptedLLM):
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake):
        await fake.user_says(OWNER, "once")
        await says(fake, OWNER, "ok")
        fake.updates.append(dict(fake.updates[-1]))  # Telegram delivers the same update again
        await fake.user_says(OWNER, "twice")
        await fake.wait_for(lambda: len(fake.texts_to(OWNER)) == 2)
    assert len(llm.chats()) == 2


async def test_network_loss_is_retried_with_backoff_by_the_supervisor(tmp_path, llm: ScriptedLLM):
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    health = Health()
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake, health=health, api_base=f"http://127.0.0.1:{closed_port}"):
        state = health.component("telegram")
        while state.restarts < 2:
            await asyncio.wait_for(state.settled.wait(), 5)
            state.settled.clear()
    assert state.status in ("failed", "starting") and "Telegram unreachable" in state.last_error


async def test_edge_run_starts_telegram_when_the_token_is_in_the_environment(tmp_path, llm: ScriptedLLM):
    llm.script("Hello from the Pi.")
    async with FakeTelegram() as fake:
        env = edge_env(tmp_path, llm, TELEGRAM_BOT_TOKEN=TOKEN, EDGE_TELEGRAM__API_BASE=fake.url,
                       EDGE_TELEGRAM__ALLOWED_USERS=str(OWNER), EDGE_TELEGRAM__POLL_TIMEOUT_S="1",
                       EDGE_GATEWAY__ENABLED="false")
        daemon = await asyncio.create_subprocess_exec(sys.executable, "-m", "edge", "run", env=env, cwd=tmp_path,
                                                      stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            await fake.wait_for(lambda: fake.sent("getUpdates"), within_s=20)
            await fake.user_says(OWNER, "hi")
            await says(fake, OWNER, "Hello from the Pi.")
        finally:
            daemon.terminate()
            _, err = await asyncio.wait_for(daemon.communicate(), 10)
    assert daemon.returncode == 0 and TOKEN not in err.decode()  # the token never reaches the log


async def test_a_scheduled_job_reaches_the_owner_through_the_bot(tmp_path, llm: ScriptedLLM):
    from edge.channels.base import ReplyStreams
    from edge.scheduler.cron import CHANNEL, Scheduler

    llm.script("The porch light is on.")
    async with FakeTelegram() as fake, bot(tmp_path, llm, fake, notify_chat=str(OWNER)) as (channel, rt):
        scheduler = Scheduler(rt.jobs, rt.config.scheduler, channel.bus, ReplyStreams(CHANNEL, channel.bus),
                              rt.registry)
        job = await rt.jobs.add("@daily", "agent", "Is the porch light on?", "telegram")
        run = await scheduler.run_job(job)
        await says(fake, OWNER, "The porch light is on.")
        other_chat = await rt.jobs.add("@daily", "notify", "Bins out tonight", "telegram", target="telegram:2002")
        await scheduler.run_job(other_chat)
        await says(fake, 2002, "Bins out tonight")  # a job can name its chat
    assert run.status == "ok" and fake.sent("sendMessage", OWNER)
