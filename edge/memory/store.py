"""Sessions, their messages, the audit trail and token usage, read and written through the Database."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass
from typing import Any

import apsw
import orjson

from edge.memory.db import Database, transaction

Message = dict[str, Any]  # {"role", "content", optional "tool_calls", "tool_call_id", "name"}
_EXTRA_KEYS = ("tool_calls", "tool_call_id", "name")


@dataclass(frozen=True)
class AuditRecord:
    session_id: str | None
    tool: str
    arguments: str
    decision: str
    ok: bool
    duration_ms: float
    result: str


@dataclass(frozen=True)
class Usage:
    session_id: str | None
    model: str
    prompt_tokens: int
    completion_tokens: int
    requests: int
    duration_ms: float


class Store:
    def __init__(self, db: Database) -> None:
        self.db = db

    async def current_session(self, key: str) -> str:
        """The session a key (a chat, a terminal) is in now; created on first use."""

        def get(con: apsw.Connection) -> str:
            row = con.execute("SELECT value FROM kv WHERE key = ?", (f"session:{key}",)).fetchone()
            return row[0] if row else _create_session(con, key)

        return await self.db.call(get)

    async def new_session(self, key: str) -> str:
        return await self.db.call(lambda con: _create_session(con, key))

    async def history(self, session_id: str) -> list[Message]:
        """The session's messages that compaction has not folded into its summary, oldest first."""
        return (await self.conversation(session_id))[1]

    async def summary(self, session_id: str) -> str:
        return (await self.conversation(session_id))[0]

    async def conversation(self, session_id: str, limit: int = 400) -> tuple[str, list[Message]]:
        """(summary of the compacted part, live messages oldest first), read in one call: a turn needs both."""
        def read(con: apsw.Connection) -> tuple[str, list[Message]]:
            row = con.execute("SELECT summary FROM sessions WHERE id = ?", (session_id,)).fetchone()
            rows = con.execute(
                "SELECT role, content, extra FROM messages WHERE session_id = ? AND NOT compacted"
                " ORDER BY id DESC LIMIT ?", (session_id, limit),
            ).fetchall()
            return (row[0] if row else ""), [_row_to_message(r) for r in reversed(rows)]

        return await self.db.call(read)

    async def compact(self, session_id: str, count: int, summary: str) -> None:
        """Fold the session's oldest `count` live messages into `summary`, in one transaction. They stay in
        the database (marked compacted) but are no longer sent to the model."""
        def write(con: apsw.Connection) -> None:
            with transaction(con):
                con.execute(
                    "UPDATE messages SET compacted = 1 WHERE id IN (SELECT id FROM messages WHERE session_id = ?"
                    " AND NOT compacted ORDER BY id LIMIT ?)", (session_id, count))
                con.execute("UPDATE sessions SET summary = ? WHERE id = ?", (summary, session_id))

        await self.db.call(write)

    async def append(self, session_id: str, turn_id: str, messages: list[Message]) -> None:
        """Write a turn's messages in one transaction: one fsync per turn, not one per message."""
        now = time.time()

        def write(con: apsw.Connection) -> None:
            with transaction(con):
                con.executemany(
                    "INSERT INTO messages (session_id, turn_id, role, content, extra, created_at) VALUES (?,?,?,?,?,?)",
                    [(session_id, turn_id, m["role"], m.get("content") or "", _extra(m), now) for m in messages],
                )
                con.execute("UPDATE sessions SET updated_at = ? WHERE id = ?", (now, session_id))

        await self.db.call(write)

    async def audit(self, record: AuditRecord) -> None:
        def write(con: apsw.Connection) -> None:
            con.execute(
                "INSERT INTO audit (at, session_id, tool, arguments, decision, ok, duration_ms, result)"
                " VALUES (?,?,?,?,?,?,?,?)",
                (time.time(), record.session_id, record.tool, record.arguments, record.decision,
                 int(record.ok), record.duration_ms, record.result),
            )

        await self.db.call(write)

    async def audit_trail(self, limit: int = 50) -> list[AuditRecord]:
        def read(con: apsw.Connection) -> list[AuditRecord]:
            rows = con.execute(
                "SELECT session_id, tool, arguments, decision, ok, duration_ms, result FROM audit ORDER BY id DESC LIMIT ?",
                (limit,),
            ).fetchall()
            return [AuditRecord(r[0], r[1], r[2], r[3], bool(r[4]), r[5], r[6]) for r in reversed(rows)]

        return await self.db.call(read)

    async def record_usage(self, usage: Usage) -> None:
        def write(con: apsw.Connection) -> None:
            con.execute(
                "INSERT INTO usage (at, session_id, model, prompt_tokens, completion_tokens, requests, duration_ms)"
                " VALUES (?,?,?,?,?,?,?)",
                (time.time(), usage.session_id, usage.model, usage.prompt_tokens, usage.completion_tokens,
                 usage.requests, usage.duration_ms),
            )

        await self.db.call(write)

    async def usage_totals(self) -> tuple[int, int, int]:
        """(turns, prompt tokens, completion tokens) over the whole database."""
        row = await self.db.call(
            lambda con: con.execute(
                "SELECT count(*), coalesce(sum(prompt_tokens),0), coalesce(sum(completion_tokens),0) FROM usage"
            ).fetchone()
        )
        return int(row[0]), int(row[1]), int(row[2])


def _create_session(con: apsw.Connection, key: str) -> str:
    session_id = uuid.uuid4().hex[:16]
    now = time.time()
    with transaction(con):
        con.execute("INSERT INTO sessions (id, key, created_at, updated_at) VALUES (?,?,?,?)", (session_id, key, now, now))
        con.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (f"session:{key}", session_id))
    return session_id


def _extra(message: Message) -> bytes | None:
    extra = {k: message[k] for k in _EXTRA_KEYS if message.get(k)}
    return orjson.dumps(extra) if extra else None


def _row_to_message(row: tuple[str, str, bytes | None]) -> Message:
    role, content, extra = row
    message: Message = {"role": role, "content": content}
    if extra:
        message.update(orjson.loads(extra))
    return message
