"""The scheduler service in `edge run`: runs due jobs, delivers their results, keeps their history.

Agent jobs go through the bus like any message (on the internal "scheduler" channel) and their answer is
then sent to the job's channel; shell jobs go through the registry, so the policy gate and the audit
table see them; notifications are sent as they are. A run missed while edge was off (or before the
clock was set) runs once late if the job catches up, otherwise is recorded as missed. A failed run is
retried with backoff; a job failing `disable_after_failures` runs in a row is turned off and the owner
told. At most `max_concurrent_jobs` run at once.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import UTC, datetime

from edge.bus import Bus, InboundMessage
from edge.channels.base import ReplyStreams
from edge.config import SchedulerConfig
from edge.errors import EdgeError
from edge.scheduler.jobs import Job, Jobs, Run
from edge.tools.policy import Answer, ApprovalRequest
from edge.tools.registry import Registry, ToolCall

log = logging.getLogger(__name__)
RESCAN_S = 60.0  # jobs added by `edge cron` in another process, and a clock NTP has just set, are seen this soon
LATE_S = 300.0  # a run this late was missed (edge was off), not merely delayed
CHANNEL = "scheduler"


class JobFailed(EdgeError):
    """A run that did not work; the text is what the history shows."""


class Clock:
    """Wall-clock time and sleeping, in one place so that tests can drive both."""

    def now(self) -> datetime:
        return datetime.now(UTC)

    async def sleep(self, seconds: float, wake: asyncio.Event | None = None) -> None:
        """Sleep, or less if `wake` is set."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for((wake or asyncio.Event()).wait(), max(seconds, 0))


async def deliver(bus: Bus, channel: str, text: str, target: str = "") -> bool:
    """Send a result to its channel; "log" keeps it in the history and log only. False: channel not running."""
    return channel == "log" or await bus.notify(channel, text, target)


async def _approved_at_creation(request: ApprovalRequest) -> Answer:
    # Whoever created the job approved what it runs (cron_add asks for shell jobs; `edge cron add` is the
    # owner at the terminal). The gate still refuses in readonly mode and checks the shell allowlist.
    return "yes"


class Scheduler:
    def __init__(self, jobs: Jobs, config: SchedulerConfig, bus: Bus, streams: ReplyStreams, registry: Registry,
                 clock: Clock | None = None) -> None:
        """`streams`: the "scheduler" channel on the bus, shared with the heartbeat."""
        self.jobs, self.config, self.bus, self.streams, self.registry = jobs, config, bus, streams, registry
        self.clock = clock or Clock()
        self._slots = asyncio.Semaphore(max(1, config.max_concurrent_jobs))
        self._running: set[asyncio.Task[Run]] = set()
        self.runs_recorded = 0
        self._recorded = asyncio.Condition()

    async def run(self, started) -> None:  # type: ignore[no-untyped-def]
        started()
        try:
            while True:
                now = self.clock.now()
                for job in await self.jobs.due(now.timestamp()):
                    await self._dispatch(job, now)
                earliest = await self.jobs.earliest()
                delay = RESCAN_S if earliest is None else min(RESCAN_S, earliest - now.timestamp())
                self.jobs.changed.clear()
                await self.clock.sleep(delay, self.jobs.changed)
        finally:
            for task in self._running:
                task.cancel()
            await asyncio.gather(*self._running, return_exceptions=True)

    async def _dispatch(self, job: Job, now: datetime) -> None:
        assert job.next_run is not None
        due = job.next_run
        try:
            following = self.jobs.schedule_of(job).next_after(now)  # runs missed meanwhile are not made up one by one
        except EdgeError as exc:  # e.g. a sunset job after [location] was removed: never a crash loop
            problem = f"its schedule no longer works: {exc}"
            await self.jobs.turn_off(job.id, problem)
            await self._record(Run(job.id, due, now.timestamp(), 0.0, "failed", 0, problem))
            await self._tell_owner(job, problem)
            return
        await self.jobs.set_next(job.id, following.timestamp() if following else None)
        if now.timestamp() - due > LATE_S and not job.catch_up:
            when = datetime.fromtimestamp(due, self.jobs.place.zone).strftime("%Y-%m-%d %H:%M")
            await self._record(Run(job.id, due, now.timestamp(), 0.0, "missed", 0,
                                   f"not run: edge was not running at {when} (the job does not catch up)"))
            return
        task = asyncio.create_task(self.run_job(job, due), name=f"job:{job.id}")
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def run_job(self, job: Job, due: float | None = None, manual: bool = False) -> Run:
        """One run, with its retries; recorded in the history. `edge cron run` calls it with manual=True."""
        async with self._slots:
            started, began = self.clock.now().timestamp(), time.monotonic()
            attempts, output, ok = 0, "", False
            while not ok and attempts <= self.config.retries:
                if attempts:
                    await self.clock.sleep(self.config.retry_backoff_s * 2 ** (attempts - 1))
                attempts += 1
                try:
                    output = await asyncio.wait_for(self._execute(job), self.config.job_timeout_s)
                    ok = True
                except TimeoutError:
                    output = f"did not finish within {self.config.job_timeout_s:g} s"
                except EdgeError as exc:
                    output = str(exc)
                if not ok:
                    log.warning("job #%d %s: attempt %d failed: %s", job.id, job.name, attempts, output)
            run = Run(job.id, due or started, started, (time.monotonic() - began) * 1000, "ok" if ok else "failed",
                      attempts, output)
        failures, turned_off = await self._record(run, manual)
        if turned_off:
            await self._tell_owner(job, f"it failed {failures} times in a row. Last error: {output[:300]}")
        return run

    async def _record(self, run: Run, manual: bool = False) -> tuple[int, bool]:
        result = await self.jobs.record(run, manual, self.config.disable_after_failures)
        async with self._recorded:
            self.runs_recorded += 1
            self._recorded.notify_all()
        return result

    async def wait_runs(self, count: int) -> None:
        """Until `count` runs have been recorded since start (for `edge cron run` and for tests)."""
        async with self._recorded:
            await self._recorded.wait_for(lambda: self.runs_recorded >= count)

    async def _execute(self, job: Job) -> str:
        if job.kind == "notify":
            output = job.payload
        elif job.kind == "shell":
            result = await self.registry.execute(ToolCall(f"job{job.id}", "shell", {"command": job.payload}),
                                                 f"cron:{job.id}", _approved_at_creation, small=False)
            if result.outcome == "unknown":
                raise JobFailed("shell commands are switched off: [security] autonomy is readonly, "
                                "or [tools] shell_allow is empty")
            if result.outcome != "ok":
                raise JobFailed(result.content)
            output = result.content
        else:
            reply = await self.streams.answer(InboundMessage(CHANNEL, f"job:{job.id}", f"cron:{job.id}", job.payload))
            if reply is None or reply.data.get("error"):
                raise JobFailed(reply.text if reply else "the agent gave no answer")
            output = reply.text
        await self._deliver(job.channel, output, job.target)
        return output

    async def _deliver(self, channel: str, text: str, target: str = "") -> None:
        if not await deliver(self.bus, channel, text, target):
            raise JobFailed(f"the {channel} channel is not running, so the result could not be sent "
                            f"(is its token set?); the output was: {text[:200]}")

    async def _tell_owner(self, job: Job, why: str) -> None:
        text = (f"I turned off the job #{job.id} \"{job.name}\": {why}. `edge cron run {job.id}` tries it again "
                "and turns it back on if it works.")
        log.error("%s", text)
        await deliver(self.bus, job.channel if job.channel != "log" else self.config.channel, text)
