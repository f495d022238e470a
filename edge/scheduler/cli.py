"""`edge cron list|add|remove|run|history`: the scheduled jobs from the shell.

A job added here is picked up by a running daemon within a minute. `edge cron run` runs a job now in
this process and prints its result instead of sending it.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime

from edge.bus import Bus, OutboundMessage
from edge.config import Config, secret
from edge.scheduler.jobs import JobError, Jobs


async def run(config: Config, args: argparse.Namespace) -> int:
    if args.action == "run":
        return await _run_now(config, args.job)
    from edge.memory.db import Database
    from edge.scheduler.schedule import Place

    async with Database(config.database) as db:
        jobs = Jobs(db, Place.from_config(config.location), config.scheduler.history_per_job)
        if args.action == "list":
            found = await jobs.all(include_done=args.all)
            for job in found:
                print(job.describe(jobs.place))
            if not found:
                print("no jobs (add one: edge cron add \"0 7 * * *\" \"Good morning\")", file=sys.stderr)
            return 0
        if args.action == "add":
            channel = args.channel or config.scheduler.channel
            if args.chat and not args.chat.lstrip("-").isdigit():
                raise JobError(f"--chat {args.chat!r}: a Telegram chat id is a number (the bot's log shows it)")
            job = await jobs.add(args.schedule, args.kind, args.text or "", channel, args.name or "",
                                 target=f"{channel}:{args.chat}" if args.chat else "", catch_up=args.catch_up)
            print(f"added {job.describe(jobs.place)}")
            if channel == "telegram" and not secret(config.telegram.token_env):
                print(f"note: no Telegram bot token in ${config.telegram.token_env} (or a credential of that name): "
                      "results cannot be sent until there is one; `--channel log` keeps them in the history",
                      file=sys.stderr)
            return 0
        if args.action == "remove":
            removed = await jobs.remove(args.job)
            print(f"removed #{removed.id} {removed.name}")
            return 0
        job = await jobs.get(args.job)
        runs = await jobs.history(job.id)
        for entry in runs:
            when = datetime.fromtimestamp(entry.started_at, jobs.place.zone).strftime("%Y-%m-%d %H:%M")
            tries = f", {entry.attempts} attempts" if entry.attempts > 1 else ""
            print(f"{when}  {entry.status:<6} {entry.duration_ms / 1000:6.1f} s{tries}  {entry.output[:200]!r}")
        if not runs:
            print(f"job #{job.id} has not run yet", file=sys.stderr)
        return 0


class _Here:
    """Stands in for the job's channel: the result is printed here instead of sent."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def send(self, message: OutboundMessage) -> None:
        pass


async def _run_now(config: Config, which: str) -> int:
    import asyncio

    from edge.agent.loop import AgentLoop
    from edge.app import runtime
    from edge.channels.base import ReplyStreams
    from edge.metrics import Counters
    from edge.scheduler.cron import CHANNEL, Scheduler

    async with runtime(config) as rt:
        job = await rt.jobs.get(which)
        bus = Bus()
        bus.register(_Here(job.channel))
        scheduler = Scheduler(rt.jobs, config.scheduler, bus, ReplyStreams(CHANNEL, bus), rt.registry)
        agent = asyncio.create_task(AgentLoop(bus, rt, config.agent, Counters()).run(lambda: None))
        try:
            result = await scheduler.run_job(job, manual=True)
        finally:
            agent.cancel()
            await asyncio.gather(agent, return_exceptions=True)
    if result.status != "ok":
        print(f"edge: job #{job.id} failed after {result.attempts} attempt(s): {result.output}", file=sys.stderr)
        return 1
    print(result.output)
    print(f"(job #{job.id} ran in {result.duration_ms / 1000:.1f} s; the daemon sends its result to {job.channel})",
          file=sys.stderr)
    return 0
