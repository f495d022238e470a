"""The SQLite file: migrations from blank, sessions that survive restarts, errors translated once."""

from __future__ import annotations

import apsw
import pytest

from edge.errors import StorageError
from edge.memory.db import Database, migrate
from edge.memory.migrations import MIGRATIONS
from edge.memory.store import Store


def test_migrations_apply_to_a_blank_database_once(tmp_path):
    con = apsw.Connection(str(tmp_path / "x.db"))
    assert migrate(con, MIGRATIONS) == len(MIGRATIONS)
    assert migrate(con, MIGRATIONS) == len(MIGRATIONS)
    tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    assert {"sessions", "messages", "audit", "usage", "kv"} <= tables
    assert con.execute("PRAGMA user_version").fetchone()[0] == len(MIGRATIONS)


def test_a_database_from_a_newer_edge_is_refused(tmp_path):
    con = apsw.Connection(str(tmp_path / "x.db"))
    con.execute(f"PRAGMA user_version = {len(MIGRATIONS) + 1}")
    with pytest.raises(apsw.SchemaChangeError, match="upgrade edge"):
        migrate(con, MIGRATIONS)


async def test_sessions_and_messages_survive_a_restart(tmp_path):
    path = tmp_path / "edge.db"
    async with Database(path) as db:
        store = Store(db)
        session = await store.current_session("cli:chat")
        await store.append(session, "t1", [{"role": "user", "content": "hi"},
                                           {"role": "assistant", "content": "", "tool_calls": [{"id": "c", "name": "x", "arguments": {}}]},
                                           {"role": "tool", "content": "r", "tool_call_id": "c", "name": "x"}])
    async with Database(path) as db:
        store = Store(db)
        assert await store.current_session("cli:chat") == session
        history = await store.history(session)
        fresh = await store.new_session("cli:chat")
        assert await store.current_session("cli:chat") == fresh != session
    assert history[1]["tool_calls"][0]["name"] == "x" and history[2]["tool_call_id"] == "c"


async def test_journal_is_wal(tmp_path):
    async with Database(tmp_path / "edge.db") as db:
        assert await db.call(lambda con: con.execute("PRAGMA journal_mode").fetchone()[0]) == "wal"


async def test_a_damaged_file_gives_a_clear_error(tmp_path):
    path = tmp_path / "edge.db"
    path.write_bytes(b"this is not a database" * 100)
    with pytest.raises(StorageError, match="damaged"):
        async with Database(path):
            pass


async def test_disk_full_is_a_clear_error_and_nothing_half_written(tmp_path):
    async with Database(tmp_path / "edge.db") as db:
        store = Store(db)
        session = await store.current_session("s")
        pages = await db.call(lambda con: con.execute("PRAGMA page_count").fetchone()[0])
        await db.call(lambda con: con.execute(f"PRAGMA max_page_count = {pages + 1}"))  # SQLite now answers SQLITE_FULL
        turn = [{"role": "assistant", "content": "x" * 20000} for _ in range(5)]
        with pytest.raises(StorageError, match="full: nothing was saved"):
            await store.append(session, "t", turn)
        assert await store.history(session) == []  # the transaction rolled back whole
        await store.append(session, "t", [{"role": "user", "content": "small"}])  # and the store still works
        assert len(await store.history(session)) == 1
