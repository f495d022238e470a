"""Jobs and their run history in edge.db: what the scheduler runs, the tools and `edge cron` manage."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal, get_args

import apsw

from edge.config import ResultChannel
from edge.errors import EdgeError
from edge.memory.db import Database, transaction
from edge.scheduler.schedule import At, Place, Schedule, parse

KINDS = ("agent", "shell", "notify")
CHANNELS = get_args(ResultChannel)
_COLUMNS = "id, name, schedule, kind, payload, channel, target, catch_up, enabled, next_run, failures, note, created_at"


class JobError(EdgeError):
    """A job that cannot be created or found; the message says what to do."""


@dataclass(frozen=True)
class Job:
    id: int
    name: str
    schedule: str
    kind: str
    payload: str
    channel: str
    target: str
    catch_up: bool
    enabled: bool
    next_run: float | None
    failures: int
    note: str
    created_at: float

    def describe(self, place: Place) -> str:
        when = "done" if self.next_run is None else datetime.fromtimestamp(self.next_run, place.zone).strftime(
            "next %a %Y-%m-%d %H:%M")
        state = "" if self.enabled else f" [off: {self.note}]" if self.note != "done" else " [done]"
        return f"#{self.id} {self.name}: {self.schedule} ({when}) → {self.kind} to {self.channel}{state}"


@dataclass(frozen=True)
class Run:
    job_id: int
    due_at: float
    started_at: float
    duration_ms: float
    status: Literal["ok", "failed", "missed"]
    attempts: int
    output: str


class Jobs:
    def __init__(self, db: Database, place: Place, history_per_job: int = 50) -> None:
        self.db, self.place, self.history_per_job = db, place, history_per_job
        self.changed = asyncio.Event()  # a job was added or removed here: the scheduler looks again at once

    def schedule_of(self, job: Job) -> Schedule:
        return parse(job.schedule, self.place, datetime.fromtimestamp(job.created_at, UTC))

    async def add(self, schedule: str, kind: str, payload: str, channel: str, name: str = "", target: str = "",
                  catch_up: bool | None = None, now: datetime | None = None) -> Job:
        """Check everything (the schedule, the kind, the channel) before anything is stored."""
        now = now or datetime.now(UTC)
        if kind not in KINDS:
            raise JobError(f"unknown kind {kind!r}: use one of {', '.join(KINDS)}")
        if channel not in CHANNELS:
            raise JobError(f"unknown channel {channel!r}: use one of {', '.join(CHANNELS)}")
        if not payload.strip():
            raise JobError("a job needs something to do: a prompt, a command or a message")
        parsed = parse(schedule, self.place, now)
        next_run = parsed.next_after(now)
        if next_run is None:
            raise JobError(f"{schedule!r} is in the past")
        catch_up = isinstance(parsed, At) if catch_up is None else catch_up  # a missed reminder is still wanted
        name = name.strip() or " ".join(payload.split())[:40]
        created = now.timestamp()

        def insert(con: apsw.Connection) -> int:
            with transaction(con):
                return int(con.execute(
                    "INSERT INTO jobs (name, schedule, kind, payload, channel, target, catch_up, next_run, created_at)"
                    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
                    (name, parsed.text, kind, payload.strip(), channel, target, int(catch_up), next_run.timestamp(),
                     created)).fetchone()[0])

        job_id = await self.db.call(insert)
        self.changed.set()
        return Job(job_id, name, parsed.text, kind, payload.strip(), channel, target, catch_up, True,
                   next_run.timestamp(), 0, "", created)

    async def all(self, include_done: bool = False) -> list[Job]:
        where = "" if include_done else "WHERE note != 'done'"
        rows = await self.db.call(lambda con: con.execute(f"SELECT {_COLUMNS} FROM jobs {where} ORDER BY id").fetchall())
        return [_job(row) for row in rows]

    async def get(self, job: str | int) -> Job:
        text = str(job).lstrip("#")
        column = "id" if text.isdigit() else "name"
        row = await self.db.call(lambda con: con.execute(f"SELECT {_COLUMNS} FROM jobs WHERE {column} = ?",
                                                         (text,)).fetchone())
        if row is None:
            raise JobError(f"no job {job!r} (`edge cron list` shows them)")
        return _job(row)

    async def remove(self, job: str | int) -> Job:
        found = await self.get(job)
        await self.db.call(lambda con: con.execute("DELETE FROM jobs WHERE id = ?", (found.id,)))
        self.changed.set()
        return found

    async def due(self, now: float) -> list[Job]:
        rows = await self.db.call(lambda con: con.execute(
            f"SELECT {_COLUMNS} FROM jobs WHERE enabled AND next_run <= ? ORDER BY next_run", (now,)).fetchall())
        return [_job(row) for row in rows]

    async def earliest(self) -> float | None:
        return await self.db.call(lambda con: con.execute(
            "SELECT min(next_run) FROM jobs WHERE enabled").fetchone()[0])

    async def set_next(self, job_id: int, next_run: float | None) -> None:
        """The next run, stored before this one starts: a crash mid-run never runs it twice."""
        def write(con: apsw.Connection) -> None:
            if next_run is None:  # a one-shot job has had its run
                con.execute("UPDATE jobs SET next_run = NULL, enabled = 0, note = 'done' WHERE id = ?", (job_id,))
            else:
                con.execute("UPDATE jobs SET next_run = ? WHERE id = ?", (next_run, job_id))

        await self.db.call(write)

    async def turn_off(self, job_id: int, note: str) -> None:
        await self.db.call(lambda con: con.execute("UPDATE jobs SET enabled = 0, note = ? WHERE id = ?", (note, job_id)))

    async def record(self, run: Run, manual: bool = False, disable_after: int = 0) -> tuple[int, bool]:
        """Keep a run (and only the last `history_per_job`); count failures in a row. Returns the count and
        whether the job was turned off by this run. A manual run that works turns a job back on."""
        def write(con: apsw.Connection) -> tuple[int, bool]:
            with transaction(con):
                con.execute("INSERT INTO job_runs (job_id, due_at, started_at, duration_ms, status, attempts, output)"
                            " VALUES (?, ?, ?, ?, ?, ?, ?)", (run.job_id, run.due_at, run.started_at, run.duration_ms,
                                                              run.status, run.attempts, run.output[:4000]))
                con.execute("DELETE FROM job_runs WHERE job_id = ? AND id NOT IN (SELECT id FROM job_runs WHERE"
                            " job_id = ? ORDER BY id DESC LIMIT ?)", (run.job_id, run.job_id, self.history_per_job))
                row = con.execute("SELECT failures, enabled FROM jobs WHERE id = ?", (run.job_id,)).fetchone()
                if row is None:  # removed while it ran
                    return 0, False
                if run.status == "ok":  # a manual run that works turns a job that was turned off back on
                    con.execute("UPDATE jobs SET failures = 0, enabled = CASE WHEN ? AND note NOT IN ('', 'done')"
                                " THEN 1 ELSE enabled END, note = CASE WHEN ? AND note != 'done' THEN '' ELSE note END"
                                " WHERE id = ?", (manual, manual, run.job_id))
                    return 0, False
                if run.status == "missed":
                    return int(row[0]), False
                failures = int(row[0]) + 1
                turn_off = bool(row[1]) and bool(disable_after) and failures >= disable_after
                note = f"failed {failures} times in a row: {run.output[:200]}" if turn_off else None
                con.execute("UPDATE jobs SET failures = ?, enabled = CASE WHEN ? THEN 0 ELSE enabled END,"
                            " note = coalesce(?, note) WHERE id = ?", (failures, turn_off, note, run.job_id))
                return failures, turn_off

        return await self.db.call(write)

    async def history(self, job_id: int, limit: int = 50) -> list[Run]:
        rows = await self.db.call(lambda con: con.execute(
            "SELECT job_id, due_at, started_at, duration_ms, status, attempts, output FROM job_runs WHERE job_id = ?"
            " ORDER BY id DESC LIMIT ?", (job_id, limit)).fetchall())
        return [Run(*row) for row in reversed(rows)]


def _job(row: tuple) -> Job:  # type: ignore[type-arg]
    values = list(row)
    values[7], values[8] = bool(values[7]), bool(values[8])
    return Job(*values)
