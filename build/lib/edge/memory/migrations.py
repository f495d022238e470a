"""Schema changes as a list of small functions; `PRAGMA user_version` counts how many have run.

Never edit an applied migration: append a new one. `db.migrate()` applies them.
"""

from __future__ import annotations

from collections.abc import Callable

import apsw


def m001_sessions_and_audit(con: apsw.Connection) -> None:
    con.execute(
        """
        CREATE TABLE sessions (
            id TEXT PRIMARY KEY,
            key TEXT NOT NULL,            -- who it belongs to, e.g. 'cli:chat'
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX sessions_key ON sessions(key, updated_at);
        CREATE TABLE messages (
            id INTEGER PRIMARY KEY,
            session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
            turn_id TEXT NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL,
            extra BLOB,                   -- JSON: tool_calls, tool_call_id, name
            created_at REAL NOT NULL
        );
        CREATE INDEX messages_session ON messages(session_id, id);
        CREATE TABLE audit (
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            session_id TEXT,
            tool TEXT NOT NULL,
            arguments TEXT NOT NULL,      -- scrubbed of secrets
            decision TEXT NOT NULL,       -- allowed | approved | denied | invalid
            ok INTEGER NOT NULL,
            duration_ms REAL NOT NULL,
            result TEXT NOT NULL          -- first few hundred characters, scrubbed
        );
        CREATE TABLE usage (
            id INTEGER PRIMARY KEY,
            at REAL NOT NULL,
            session_id TEXT,
            model TEXT NOT NULL,
            prompt_tokens INTEGER NOT NULL,
            completion_tokens INTEGER NOT NULL,
            requests INTEGER NOT NULL,
            duration_ms REAL NOT NULL
        );
        CREATE TABLE kv (key TEXT PRIMARY KEY, value TEXT NOT NULL);
        """
    )


def m002_gateway_clients(con: apsw.Connection) -> None:
    con.execute(
        """
        CREATE TABLE clients (
            token_hash TEXT PRIMARY KEY,  -- sha256 of the bearer token; the token itself is never stored
            name TEXT NOT NULL,
            created_at REAL NOT NULL,
            last_seen REAL
        );
        CREATE TABLE pairing_codes (code_hash TEXT PRIMARY KEY, expires_at REAL NOT NULL);
        CREATE TABLE idempotency (
            client TEXT NOT NULL,
            key TEXT NOT NULL,
            response BLOB NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (client, key)
        );
        """
    )


def m003_telegram(con: apsw.Connection) -> None:
    con.execute(
        """
        CREATE TABLE telegram_senders (
            user_id INTEGER PRIMARY KEY,
            username TEXT NOT NULL,       -- without the @, may be ''
            chat_id INTEGER NOT NULL,     -- where to tell them they are paired
            status TEXT NOT NULL,         -- pending | approved
            code_hash TEXT,               -- sha256 of the code they were given, while pending
            expires_at REAL,
            notified INTEGER NOT NULL DEFAULT 0,
            created_at REAL NOT NULL
        );
        """
    )


def m004_memories(con: apsw.Connection) -> None:
    con.execute(
        """
        CREATE TABLE memories (
            id INTEGER PRIMARY KEY,
            key TEXT UNIQUE,              -- optional: "remember my wifi is X" updates the same memory
            content TEXT NOT NULL,
            category TEXT NOT NULL CHECK (category IN ('core', 'daily', 'conversation', 'archived')),
            session_id TEXT,
            created_at REAL NOT NULL,
            updated_at REAL NOT NULL
        );
        CREATE INDEX memories_category ON memories(category, updated_at);
        CREATE VIRTUAL TABLE memories_fts USING fts5(content, key, content='memories', content_rowid='id',
                                                     tokenize='porter unicode61');
        CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
            INSERT INTO memories_fts(rowid, content, key) VALUES (new.id, new.content, coalesce(new.key, ''));
        END;
        CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, key) VALUES ('delete', old.id, old.content, coalesce(old.key, ''));
        END;
        CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, key ON memories BEGIN
            INSERT INTO memories_fts(memories_fts, rowid, content, key) VALUES ('delete', old.id, old.content, coalesce(old.key, ''));
            INSERT INTO memories_fts(rowid, content, key) VALUES (new.id, new.content, coalesce(new.key, ''));
        END;
        -- Exact vectors for re-ranking; the bit-quantized copies live in a vec0 table made at open,
        -- because its width depends on the embedding model.
        CREATE TABLE memory_vectors (id INTEGER PRIMARY KEY REFERENCES memories(id) ON DELETE CASCADE,
                                     vector BLOB NOT NULL);
        CREATE TABLE embedding_cache (hash TEXT PRIMARY KEY, vector BLOB NOT NULL);  -- hash of model + text
        ALTER TABLE messages ADD COLUMN compacted INTEGER NOT NULL DEFAULT 0;
        """
    )


def m005_session_summaries(con: apsw.Connection) -> None:
    # What compaction has folded away: a summary of the session's compacted messages.
    con.execute("ALTER TABLE sessions ADD COLUMN summary TEXT NOT NULL DEFAULT ''")


def m006_jobs(con: apsw.Connection) -> None:
    con.execute(
        """
        CREATE TABLE jobs (
            id INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            schedule TEXT NOT NULL,       -- normalised: "0 7 * * *", "every 30m", "at 2026-…", "sunset-30m"
            kind TEXT NOT NULL CHECK (kind IN ('agent', 'shell', 'notify')),
            payload TEXT NOT NULL,        -- the prompt, the command or the message
            channel TEXT NOT NULL,        -- where the result goes; 'log' = only the run history
            target TEXT NOT NULL DEFAULT '',  -- a chat within the channel; '' = its default chat
            catch_up INTEGER NOT NULL,    -- run once at start if a run was missed while edge was off
            enabled INTEGER NOT NULL DEFAULT 1,
            next_run REAL,                -- NULL once a one-shot job has run
            failures INTEGER NOT NULL DEFAULT 0,  -- failed runs in a row
            note TEXT NOT NULL DEFAULT '',        -- why it is off
            created_at REAL NOT NULL
        );
        CREATE TABLE job_runs (
            id INTEGER PRIMARY KEY,
            job_id INTEGER NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
            due_at REAL NOT NULL,
            started_at REAL NOT NULL,
            duration_ms REAL NOT NULL,
            status TEXT NOT NULL,         -- ok | failed | missed
            attempts INTEGER NOT NULL,
            output TEXT NOT NULL
        );
        CREATE INDEX job_runs_job ON job_runs(job_id, id);
        """
    )


Migration = Callable[[apsw.Connection], None]
MIGRATIONS: list[Migration] = [m001_sessions_and_audit, m002_gateway_clients, m003_telegram, m004_memories,
                           m005_session_summaries, m006_jobs]
