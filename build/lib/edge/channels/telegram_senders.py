"""Who may talk to the bot: the configured allowlist plus senders the owner approved by pairing code."""

from __future__ import annotations

import secrets
import time

import apsw

from edge.gateway.auth import digest
from edge.memory.db import Database

CODE_TTL_S = 24 * 3600
_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"  # no 0/O, 1/I: read aloud or typed from a phone


def allowed_by_config(allowed: tuple[str, ...], user_id: int, username: str) -> bool:
    names = {a.lower().lstrip("@") for a in allowed}
    return str(user_id) in names or (bool(username) and username.lower() in names)


async def is_approved(db: Database, user_id: int) -> bool:
    row = await db.call(lambda con: con.execute(
        "SELECT 1 FROM telegram_senders WHERE user_id = ? AND status = 'approved'", (user_id,)).fetchone())
    return row is not None


async def issue_code(db: Database, user_id: int, username: str, chat_id: int) -> str:
    """A fresh code for an unknown sender (replacing any earlier one); the owner approves it."""
    code = "".join(secrets.choice(_ALPHABET) for _ in range(8))
    now = time.time()
    await db.call(lambda con: con.execute(
        "INSERT INTO telegram_senders (user_id, username, chat_id, status, code_hash, expires_at, created_at)"
        " VALUES (?, ?, ?, 'pending', ?, ?, ?) ON CONFLICT(user_id) DO UPDATE SET username = excluded.username,"
        " chat_id = excluded.chat_id, code_hash = excluded.code_hash, expires_at = excluded.expires_at"
        " WHERE status = 'pending'",
        (user_id, username, chat_id, digest(code), now + CODE_TTL_S, now)))
    return code


async def approve(db: Database, code: str) -> tuple[int, str] | None:
    """Approve the sender holding `code`; (user id, username), or None for a wrong or expired code."""
    normalized = code.strip().upper().replace("-", "").replace(" ", "")

    def update(con: apsw.Connection) -> tuple[int, str] | None:
        row = con.execute(
            "UPDATE telegram_senders SET status = 'approved', code_hash = NULL WHERE code_hash = ?"
            " AND status = 'pending' AND expires_at > ? RETURNING user_id, username",
            (digest(normalized), time.time())).fetchone()
        return (int(row[0]), str(row[1])) if row else None

    return await db.call(update)


async def take_newly_approved(db: Database) -> list[int]:
    """Chats of senders approved since the last call (to tell them), marked as told."""
    rows = await db.call(lambda con: con.execute(
        "UPDATE telegram_senders SET notified = 1 WHERE status = 'approved' AND notified = 0 RETURNING chat_id"
    ).fetchall())
    return [int(r[0]) for r in rows]
