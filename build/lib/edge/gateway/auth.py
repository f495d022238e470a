"""Pairing and bearer tokens: one-time codes, tokens stored only as hashes, lockout after failed attempts."""

from __future__ import annotations

import hashlib
import secrets
import time

import apsw

from edge.config import GatewayConfig
from edge.errors import EdgeError
from edge.memory.db import Database, transaction
from edge.ratelimit import RateLimiter

MAX_FAILURES = 5
LOCKOUT_S = 300.0


class PairingRefused(EdgeError):
    def __init__(self, message: str, status: int, retry_after: float = 0.0) -> None:
        super().__init__(message)
        self.status, self.retry_after = status, retry_after


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


async def new_pairing_code(db: Database, ttl_s: float) -> str:
    """A fresh one-time code (8 digits), valid for ttl_s; `edge pair` and the daemon's start both call this."""
    code = f"{secrets.randbelow(10**8):08d}"
    now = time.time()

    def write(con: apsw.Connection) -> None:
        with transaction(con):
            con.execute("DELETE FROM pairing_codes WHERE expires_at <= ?", (now,))
            con.execute("INSERT INTO pairing_codes (code_hash, expires_at) VALUES (?, ?)", (digest(code), now + ttl_s))

    await db.call(write)
    return code


class Clients:
    def __init__(self, db: Database, config: GatewayConfig, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
        self.db, self.config, self._clock = db, config, clock
        self._tokens: dict[str, str] = {}  # token hash → client name
        self._failures: dict[str, int] = {}
        self._locked_until: dict[str, float] = {}
        self._attempts = RateLimiter(10)  # pairing attempts per address per minute, failures or not

    async def load(self) -> None:
        rows = await self.db.call(lambda con: con.execute("SELECT token_hash, name FROM clients").fetchall())
        self._tokens = {row[0]: row[1] for row in rows}

    def client_for(self, token: str) -> str | None:
        return self._tokens.get(digest(token)) if token else None

    async def pair(self, code: str, address: str, name: str) -> str:
        """Trade a valid code for a new bearer token; raise PairingRefused with the HTTP status otherwise."""
        now = self._clock()
        locked = self._locked_until.get(address, 0.0)
        if locked > now:
            raise PairingRefused("too many wrong codes; try again later", 429, locked - now)
        if not self._attempts.allow(address):
            raise PairingRefused("too many pairing attempts; slow down", 429, self._attempts.retry_after(address))
        if not await self._consume(code.strip()):
            failures = self._failures[address] = self._failures.get(address, 0) + 1
            if failures >= MAX_FAILURES:
                self._locked_until[address] = now + LOCKOUT_S
                self._failures.pop(address)
            raise PairingRefused("wrong or expired pairing code (get a fresh one with `edge pair`)", 403)
        self._failures.pop(address, None)
        token = secrets.token_urlsafe(32)
        token_hash = digest(token)
        await self.db.call(lambda con: con.execute(
            "INSERT INTO clients (token_hash, name, created_at) VALUES (?, ?, ?)", (token_hash, name, time.time())))
        self._tokens[token_hash] = name
        return token

    async def _consume(self, code: str) -> bool:
        def use(con: apsw.Connection) -> bool:
            row = con.execute("DELETE FROM pairing_codes WHERE code_hash = ? AND expires_at > ? RETURNING 1",
                              (digest(code), time.time())).fetchone()
            return row is not None

        return bool(code) and await self.db.call(use)
