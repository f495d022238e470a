"""The scheduler and the heartbeat, driven by a clock the test moves: no waiting for real time."""

from __future__ import annotations

import asyncio
import contextlib
from datetime import datetime
from zoneinfo import ZoneInfo

from edge.agent.loop import AgentLoop
from edge.bus import Bus, OutboundMessage
from edge.channels.base import ReplyStreams
from edge.metrics import Counters
from edge.scheduler.cron import CHANNEL, Scheduler
from edge.scheduler.heartbeat import Heartbeat, is_ok, open_tasks, within
from edge.scheduler.jobs import Run
from edge.templates import WORKSPACE_FILES
from tests.conftest import Recorder, edge_env, open_runtime, run_edge, running
from tests.fakes.channel import Collector
from tests.fakes.clock import FakeClock
from tests.fakes.llm_server import ScriptedLLM, Step

BERLIN = ZoneInfo("Europe/Berlin")
PLACE = {"timezone": "Europe/Berlin", "latitude": 52.52, "longitude": 13.405}
MONDAY_6 = datetime(2026, 11, 23, 6, 0, tzinfo=BERLIN)


@contextlib.asynccontextmanager
async def scheduling(tmp_path, llm, phone=None, start=MONDAY_6, **sections):  # type: ignore[no-untyped-def]
    """A runtime, the agent loop, a phone on the "telegram" channel, and a scheduler on a fake clock."""
    async with open_runtime(tmp_path, llm, location=PLACE, **sections) as rt:
        bus, clock = Bus(), FakeClock(start)
        phone = phone or Collector("telegram")
        bus.register(phone)
        streams = ReplyStreams(CHANNEL, bus)
        scheduler = Scheduler(rt.jobs, rt.config.scheduler, bus, streams, rt.registry, clock)
        async with running(AgentLoop(bus, rt, rt.config.agent, Counters()).run(lambda: None)):
            yield rt, scheduler, phone, clock, streams, bus


async def test_a_reminder_fires_on_time_once_and_is_then_done(tmp_path, llm: ScriptedLLM):
    async with scheduling(tmp_path, llm) as (rt, scheduler, phone, clock, *_):
        job = await rt.jobs.add("at 07:00", "notify", "Water the plants", "telegram", now=clock.now())
        async with running(scheduler.run(lambda: None)):
            await clock.sleepers(1)
            await clock.advance(minutes=59)
            await clock.sleepers(1)
            assert phone.messages.empty()  # not a minute early
            await clock.advance(minutes=1)
            message = await phone.next()
            await asyncio.wait_for(scheduler.wait_runs(1), 5)
        listed = await rt.jobs.all()
        history = await rt.jobs.history(job.id)
    assert message.kind == "notify" and message.text == "Water the plants"
    assert listed == [] and [(r.status, r.output) for r in history] == [("ok", "Water the plants")]


async def test_an_agent_job_runs_a_turn_and_its_answer_goes_to_the_channel(tmp_path, llm: ScriptedLLM):
    llm.script("The greenhouse reads 21 °C.")
    async with scheduling(tmp_path, llm) as (rt, scheduler, phone, clock, *_):
        job = await rt.jobs.add("every 1h", "agent", "What does the greenhouse sensor read?", "telegram",
                                now=clock.now())
        async with running(scheduler.run(lambda: None)):
            await clock.sleepers(1)
            await clock.advance(hours=1)
            message = await phone.next()
            await asyncio.wait_for(scheduler.wait_runs(1), 5)
        history = await rt.jobs.history(job.id)
        following = (await rt.jobs.get(job.id)).next_run
    assert message.text == "The greenhouse reads 21 °C."
    assert llm.chats()[-1]["messages"][-1]["content"] == "What does the greenhouse sensor read?"
    assert history[0].output == "The greenhouse reads 21 °C."
    assert following == MONDAY_6.timestamp() + 2 * 3600


async def test_shell_jobs_go_through_the_policy_gate_and_the_audit(tmp_path, llm: ScriptedLLM):
    async with scheduling(tmp_path, llm) as (rt, scheduler, _, clock, *_):
        job = await rt.jobs.add("every 1h", "shell", "echo hello from cron", "log", now=clock.now())
        run = await scheduler.run_job(job)
        audit = await rt.store.audit_trail()
    assert run.status == "ok" and "hello from cron" in run.output
    assert [(a.tool, a.decision) for a in audit] == [("shell", "approved")]
    async with scheduling(tmp_path / "ro", llm, security={"autonomy": "readonly"}, scheduler={"retries": 0}) as (
            rt, scheduler, _, clock, *_):
        job = await rt.jobs.add("every 1h", "shell", "echo hello", "log", now=clock.now())
        refused = await scheduler.run_job(job)
    assert refused.status == "failed" and "autonomy is readonly" in refused.output


async def test_runs_missed_while_off_catch_up_once_or_are_recorded_as_missed(tmp_path, llm: ScriptedLLM):
    async with scheduling(tmp_path, llm) as (rt, scheduler, phone, clock, *_):
        eager = await rt.jobs.add("0 7 * * *", "notify", "Morning report", "telegram", catch_up=True, now=clock.now())
        lazy = await rt.jobs.add("0 7 * * *", "notify", "Stretch", "telegram", now=clock.now())
        await clock.advance(days=2, hours=6)  # edge was off from Monday 06:00 to Wednesday 12:00
        async with running(scheduler.run(lambda: None)):
            await asyncio.wait_for(scheduler.wait_runs(2), 5)
            message = await phone.next()
        eager_runs, lazy_runs = await rt.jobs.history(eager.id), await rt.jobs.history(lazy.id)
        next_runs = {(await rt.jobs.get(j.id)).next_run for j in (eager, lazy)}
    assert message.text == "Morning report" and phone.messages.empty()  # once, not once per missed day
    assert [r.status for r in eager_runs] == ["ok"]
    assert [r.status for r in lazy_runs] == ["missed"] and "not run: edge was not running" in lazy_runs[0].output
    assert next_runs == {datetime(2026, 11, 26, 7, 0, tzinfo=BERLIN).timestamp()}


async def test_failures_are_retried_then_the_job_is_turned_off_and_the_owner_told(tmp_path, llm: ScriptedLLM):
    settings = {"retries": 1, "retry_backoff_s": 30.0, "disable_after_failures": 2}
    async with scheduling(tmp_path, llm, scheduler=settings) as (rt, scheduler, phone, clock, *_):
        job = await rt.jobs.add("every 1h", "shell", "rm -rf /tmp/nothing", "telegram", now=clock.now())
        async with running(scheduler.run(lambda: None)):
            for hour in (1, 2):
                await clock.sleepers(1)
                await clock.advance(hours=1)
                await clock.sleepers(2)  # the main loop, and the run waiting to retry
                await clock.advance(seconds=30)
                await asyncio.wait_for(scheduler.wait_runs(hour), 5)
            told = await phone.next()
        history = await rt.jobs.history(job.id)
        after = await rt.jobs.get(job.id)
    assert [(r.status, r.attempts) for r in history] == [("failed", 2), ("failed", 2)]
    assert "not allowed" in history[0].output or "allowlist" in history[0].output
    assert not after.enabled and after.failures == 2 and "failed 2 times in a row" in after.note
    assert told.text.startswith(f"I turned off the job #{job.id}") and f"edge cron run {job.id}" in told.text


async def test_a_manual_run_that_works_turns_the_job_back_on(tmp_path, llm: ScriptedLLM):
    async with scheduling(tmp_path, llm, scheduler={"retries": 0, "disable_after_failures": 1}) as (
            rt, scheduler, _, clock, *_):
        job = await rt.jobs.add("every 1h", "notify", "ping", "telegram", now=clock.now())
        await rt.db.call(lambda con: con.execute("UPDATE jobs SET enabled = 0, note = 'failed 1 times' WHERE id = ?",
                                                 (job.id,)))
        run = await scheduler.run_job(await rt.jobs.get(job.id), manual=True)
        after = await rt.jobs.get(job.id)
    assert run.status == "ok" and after.enabled and after.note == ""


class SlowPhone:
    """A channel that holds each message until released, counting how many are in flight."""

    name = "telegram"

    def __init__(self) -> None:
        self.inside = self.most = 0
        self.entered, self.release = asyncio.Event(), asyncio.Event()
        self.texts: list[str] = []

    async def send(self, message: OutboundMessage) -> None:
        self.inside += 1
        self.most = max(self.most, self.inside)
        self.entered.set()
        await self.release.wait()
        self.texts.append(message.text)
        self.inside -= 1


async def test_at_most_max_concurrent_jobs_run_at_once(tmp_path, llm: ScriptedLLM):
    phone = SlowPhone()
    async with scheduling(tmp_path, llm, phone=phone, scheduler={"max_concurrent_jobs": 1}) as (
            rt, scheduler, _, clock, *_):
        for text in ("one", "two"):
            await rt.jobs.add("at 06:30", "notify", text, "telegram", now=clock.now())
        async with running(scheduler.run(lambda: None)):
            await clock.sleepers(1)
            await clock.advance(minutes=30)
            await asyncio.wait_for(phone.entered.wait(), 5)
            await clock.sleepers(1)  # the scheduler has started both runs and gone back to sleep
            assert phone.inside == 1
            phone.release.set()
            await asyncio.wait_for(scheduler.wait_runs(2), 5)
    assert phone.most == 1 and sorted(phone.texts) == ["one", "two"]


async def test_heartbeat_makes_no_model_call_without_an_open_task(tmp_path, llm: ScriptedLLM):
    async with scheduling(tmp_path, llm) as (rt, _, _, clock, streams, bus):
        heartbeat = Heartbeat(rt.config.heartbeat, rt.config.workspace, bus, streams, BERLIN, clock)
        sent = await heartbeat.beat()  # the template HEARTBEAT.md: a heading and a hint
    assert sent is None and llm.chats() == [] and heartbeat.beats == 0


async def test_heartbeat_ok_sends_nothing_and_anything_else_is_delivered(tmp_path, llm: ScriptedLLM):
    llm.script("HEARTBEAT_OK", "The greenhouse is at 35 °C: open the window!")
    async with scheduling(tmp_path, llm, heartbeat={"active_hours": "08:00-22:00"}) as (
            rt, _, phone, clock, streams, bus):
        (rt.config.workspace / "HEARTBEAT.md").write_text("# Heartbeat tasks\n- Warn me if the greenhouse is over 30 °C\n")
        heartbeat = Heartbeat(rt.config.heartbeat, rt.config.workspace, bus, streams, BERLIN, clock)
        async with running(heartbeat.run(lambda: None)):
            await clock.sleepers(1)
            await clock.advance(minutes=30)  # 06:30: outside the active hours
            await clock.sleepers(1)
            assert llm.chats() == []
            await clock.advance(hours=1, minutes=30)  # 08:00
            await clock.sleepers(1)
            assert heartbeat.beats == 1 and phone.messages.empty()  # HEARTBEAT_OK: nothing sent
            await clock.advance(minutes=30)
            message = await phone.next()
    prompt = llm.chats()[0]["messages"][-1]["content"]
    assert "Warn me if the greenhouse is over 30 °C" in prompt and "HEARTBEAT_OK" in prompt
    assert message.kind == "notify" and message.text == "The greenhouse is at 35 °C: open the window!"


def test_open_tasks_active_hours_and_the_ok_answer():
    assert open_tasks(WORKSPACE_FILES["HEARTBEAT.md"]) == []
    assert open_tasks("# Tasks\n<!-- later -->\n- [x] done already\n- [ ] water the plants\n\nCheck the door\n") == [
        "- [ ] water the plants", "Check the door"]
    assert within("22:00-06:00", datetime(2026, 1, 1, 23, 0, tzinfo=BERLIN), BERLIN)
    assert not within("22:00-06:00", datetime(2026, 1, 1, 12, 0, tzinfo=BERLIN), BERLIN)
    assert within("", datetime(2026, 1, 1, 3, 0, tzinfo=BERLIN), BERLIN)
    assert is_ok("HEARTBEAT_OK") and is_ok("**HEARTBEAT_OK**.") and not is_ok("HEARTBEAT_OK but the door is open!")


async def test_the_model_schedules_a_reminder_from_chat(tmp_path, llm: ScriptedLLM):
    llm.script(Step(tool_calls=[{"name": "cron_add", "arguments": {"schedule": "at 07:00", "what": "Water the plants"}}]),
               "I will remind you at 7.",
               Step(tool_calls=[{"name": "cron_add", "arguments": {"schedule": "at 25:00", "what": "x"}}]),
               Step(tool_calls=[{"name": "cron_add", "arguments": {"schedule": "in 5m", "what": "ls", "kind": "shell"}}]),
               "Done.")
    async with open_runtime(tmp_path, llm, location=PLACE) as rt:
        session = await rt.store.current_session("test")
        result = await rt.agent.turn(session, "remind me at 7 to water the plants", Recorder())
        jobs = await rt.jobs.all()
        await rt.agent.turn(session, "and at 25 o'clock", Recorder())
        audit = await rt.store.audit_trail()
    assert result.text == "I will remind you at 7." and [(j.kind, j.payload) for j in jobs] == [
        ("notify", "Water the plants")]
    assert [(a.tool, a.decision, a.ok) for a in audit][1:] == [("cron_add", "allowed", False),
                                                               ("cron_add", "denied", False)]
    assert "not a time of day" in audit[1].result and "Examples:" in audit[1].result


def test_edge_cron_commands(tmp_path, llm: ScriptedLLM):
    env = edge_env(tmp_path, llm, EDGE_LOCATION__TIMEZONE="Europe/Berlin", EDGE_LOCATION__LATITUDE="52.52",
                   EDGE_LOCATION__LONGITUDE="13.405")
    cron = lambda *args: run_edge(["cron", *args], env, tmp_path)  # noqa: E731
    added = cron("add", "0 7 * * 1-5", "Good morning", "--name", "morning")
    assert added.returncode == 0 and added.stdout.startswith("added #1 morning: 0 7 * * 1-5 (next ")
    assert "no Telegram bot token" in added.stderr  # said at once, not only when the first run fails
    assert cron("add", "sunset-15m", "Is the porch light on?", "--kind", "agent", "--channel", "log").returncode == 0
    bad = cron("add", "61 * * * *", "x")
    assert bad.returncode == 1 and "'61' is not a valid minute" in bad.stderr and "Examples:" in bad.stderr
    assert cron("add", "@daily", "x", "--channel", "sms").returncode == 2  # an unknown channel is refused
    no_chat = cron("add", "@daily", "x", "--chat", "@ada")
    assert no_chat.returncode == 1 and "a Telegram chat id is a number" in no_chat.stderr
    listed = cron("list").stdout.splitlines()  # a new process: the jobs were kept
    assert len(listed) == 2 and listed[1].startswith("#2 Is the porch light on?: sunset-15m (next ")
    llm.script("Yes, it is on.")
    ran = cron("run", "2")
    assert ran.returncode == 0 and ran.stdout.strip() == "Yes, it is on."
    history = cron("history", "2").stdout
    assert " ok " in history and "Yes, it is on." in history
    assert cron("remove", "morning").stdout == "removed #1 morning\n"
    missing = cron("remove", "morning")
    assert missing.returncode == 1 and "no job 'morning'" in missing.stderr


async def test_doctor_shows_jobs_that_were_turned_off(tmp_path, llm: ScriptedLLM):
    from edge.doctor import run_checks

    async with open_runtime(tmp_path, llm, location=PLACE) as rt:
        job = await rt.jobs.add("@daily", "notify", "ping", "telegram")
        healthy = next(c for c in await run_checks(rt) if c.name == "scheduler")
        await rt.db.call(lambda con: con.execute("UPDATE jobs SET enabled = 0, note = 'failed 3 times' WHERE id = ?",
                                                 (job.id,)))
        sick = next(c for c in await run_checks(rt) if c.name == "scheduler")
    assert healthy.ok and "1 job(s), time zone Europe/Berlin; sun times for 52.52, 13.40" in healthy.detail
    assert not sick.ok and f"#{job.id} ping" in sick.detail and "edge cron history" in sick.detail


async def test_only_the_last_runs_are_kept(tmp_path, llm: ScriptedLLM):
    async with scheduling(tmp_path, llm, scheduler={"history_per_job": 3}) as (rt, _, _, clock, *_):
        job = await rt.jobs.add("every 1h", "notify", "ping", "log", now=clock.now())
        for number in range(5):
            await rt.jobs.record(Run(job.id, number, number, 1.0, "ok", 1, f"run {number}"))
        history = await rt.jobs.history(job.id)
    assert [r.output for r in history] == ["run 2", "run 3", "run 4"]


async def test_a_schedule_that_no_longer_works_turns_the_job_off_instead_of_crashing(tmp_path, llm: ScriptedLLM):
    async with scheduling(tmp_path, llm) as (rt, _, _, clock, *_):
        job = await rt.jobs.add("sunset", "notify", "Lights on", "telegram", now=clock.now())
    async with open_runtime(tmp_path, llm) as rt:  # [location] has been removed from the config since
        bus, clock, phone = Bus(), FakeClock(datetime(2026, 11, 24, 12, tzinfo=BERLIN)), Collector("telegram")
        bus.register(phone)
        scheduler = Scheduler(rt.jobs, rt.config.scheduler, bus, ReplyStreams(CHANNEL, bus), rt.registry, clock)
        async with running(scheduler.run(lambda: None)):
            told = await phone.next()
            await clock.sleepers(1)  # the scheduler carries on
        after = await rt.jobs.get(job.id)
        history = await rt.jobs.history(job.id)
    assert not after.enabled and "[location] latitude and longitude" in after.note
    assert history[0].status == "failed" and told.text.startswith(f"I turned off the job #{job.id}")
