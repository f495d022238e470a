"""Scheduling tools: the model adds, lists and removes jobs ("remind me at 7 to water the plants")."""

from __future__ import annotations

from typing import Any, Literal

from edge.scheduler.jobs import Jobs
from edge.tools.base import Risk, Tool, tool

_RISK: dict[str, Risk] = {"notify": "low", "agent": "medium", "shell": "high"}  # what the job will do, unattended


def schedule_tools(jobs: Jobs, channel: str) -> list[Tool]:
    async def cron_add(schedule: str, what: str, kind: Literal["notify", "agent", "shell"] = "notify",
                       name: str = "") -> str:
        """Schedule something for later or repeatedly: a reminder, a task for you, or a shell command.

        Args:
            schedule: when: "at 07:00", "in 20m", "at 2026-12-24 18:00", "every 2h", cron like "0 7 * * 1-5", "sunset", "sunrise-30m".
            what: the reminder text (notify), the instruction for you to carry out then (agent), or the command (shell).
            kind: "notify" sends the text as it is; "agent" runs you with it; "shell" runs the command.
            name: a short name for the job.
        """
        job = await jobs.add(schedule, kind, what, channel, name)
        return f"Scheduled: {job.describe(jobs.place)}"

    async def cron_list() -> str:
        """List the scheduled jobs with their next run."""
        found = await jobs.all()
        return "\n".join(job.describe(jobs.place) for job in found) or "No jobs are scheduled."

    async def cron_remove(job: str) -> str:
        """Remove a scheduled job, by its number (#3 → "3") or its name.

        Args:
            job: the job's number or name.
        """
        removed = await jobs.remove(job)
        return f"Removed job #{removed.id} \"{removed.name}\"."

    def risk_of(arguments: dict[str, Any]) -> Risk:
        return _RISK.get(str(arguments.get("kind", "notify")), "high")

    return [
        tool(cron_add, read_only=False, core=True, risk_of=risk_of),
        tool(cron_list),
        tool(cron_remove, read_only=False, risk="medium"),
    ]
