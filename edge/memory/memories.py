"""Long-term memories in edge.db: store, recall, forget, reindex, hygiene, and the MEMORY_SNAPSHOT.md copy.

Without an embedding model (or with one that is down) memory works on keywords alone. With one, each
memory also gets a vector; the vectors' model identity is recorded, and a different configured model
is refused until `edge memory reindex` has re-embedded everything — two models' vectors never mix.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import apsw

from edge.config import MemoryConfig
from edge.errors import StorageError
from edge.memory.db import Database, transaction
from edge.memory.embed import Embedder, EmbeddingError
from edge.memory.recall import Recalled, search

log = logging.getLogger(__name__)
Category = Literal["core", "daily", "conversation", "archived"]
CATEGORIES = ("core", "daily", "conversation", "archived")
IDENTITY_KEY = "memory:embedding"
BITS_TABLE = "memory_bits"
SNAPSHOT_NAME = "MEMORY_SNAPSHOT.md"
IMPORT_BATCH = 500  # memories per transaction when importing
SNAPSHOT_MARK = "<!-- edge memory snapshot v1 -->"
_SNAPSHOT_LINE = re.compile(r"^- (?:\[key: (?P<key>[^\]]+)\] )?(?P<content>.+)$")


@dataclass(frozen=True)
class Memory:
    id: int
    content: str
    category: str
    key: str | None
    updated_at: float


class Memories:
    def __init__(self, db: Database, embedder: Embedder | None, config: MemoryConfig) -> None:
        self.db, self.embedder, self.config = db, embedder, config
        self.mode = "keywords"  # or "vectors"
        self.problem = ""  # why vectors are off although a model is configured (doctor shows it)

    async def open(self) -> None:
        """Check the recorded vector identity against the configured model; make the vector table."""
        if self.embedder is None:
            return
        if not self.db.vectors:
            self.problem = "sqlite-vec is not available on this system"
            return
        stored, has_vectors = await self.db.call(lambda con: (
            _kv(con, IDENTITY_KEY), con.execute("SELECT 1 FROM memory_vectors LIMIT 1").fetchone() is not None))
        if stored and stored != self.embedder.identity and has_vectors:
            self.problem = (f"memories were embedded with {stored} but the config says {self.embedder.identity}; "
                            "recall uses keywords until you run `edge memory reindex`")
            log.warning("memory: %s", self.problem)
            return
        await self.db.call(self._make_vector_table)
        self.mode = "vectors"

    def _make_vector_table(self, con: apsw.Connection) -> None:
        assert self.embedder is not None
        with transaction(con):
            _create_bits_table(con, self.embedder.dims)
            con.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (IDENTITY_KEY, self.embedder.identity))

    async def _vectors_for(self, texts: list[str], cache: bool = True) -> list[bytes] | None:
        """Vectors for texts, or None: no model, or it is down — then memories are stored without a vector
        (upkeep adds it later) and recall uses keywords."""
        if self.mode != "vectors" or self.embedder is None:
            return None
        try:
            vectors = await self.embedder.embed(texts, cache)
        except EmbeddingError as exc:
            log.warning("memory: %s; keywords only for now", exc)
            self.problem = str(exc)
            return None
        self.problem = ""
        return vectors

    async def remember(self, content: str, category: Category = "core", key: str | None = None,
                       session_id: str | None = None) -> int:
        """Store a memory (or replace the one with the same key); returns its id."""
        return (await self.remember_many([(content, category, key)], session_id))[0]

    async def remember_many(self, items: list[tuple[str, str, str | None]], session_id: str | None = None) -> list[int]:
        """Store (content, category, key) items in one transaction — one write to the SD card, not one each."""
        items = [(" ".join(content.split()), category, key) for content, category, key in items]
        if any(not content for content, _, _ in items):
            raise StorageError("an empty memory cannot be stored")
        vectors = await self._vectors_for([content for content, _, _ in items])
        now = time.time()

        def write(con: apsw.Connection) -> list[int]:
            ids = []
            with transaction(con):
                for index, (content, category, key) in enumerate(items):
                    row = con.execute("SELECT id FROM memories WHERE key = ?", (key,)).fetchone() if key else None
                    if row:
                        memory_id = int(row[0])
                        con.execute("UPDATE memories SET content = ?, category = ?, updated_at = ? WHERE id = ?",
                                    (content, category, now, memory_id))
                    else:
                        memory_id = int(con.execute(
                            "INSERT INTO memories (key, content, category, session_id, created_at, updated_at)"
                            " VALUES (?, ?, ?, ?, ?, ?) RETURNING id",
                            (key, content, category, session_id, now, now)).fetchone()[0])
                    if vectors is not None:
                        self._store_vector(con, memory_id, vectors[index])
                    ids.append(memory_id)
            return ids

        return await self.db.call(write)

    @staticmethod
    def _store_vector(con: apsw.Connection, memory_id: int, vector: bytes) -> None:
        con.execute("INSERT OR REPLACE INTO memory_vectors (id, vector) VALUES (?, ?)", (memory_id, vector))
        con.execute(f"DELETE FROM {BITS_TABLE} WHERE rowid = ?", (memory_id,))
        con.execute(f"INSERT INTO {BITS_TABLE} (rowid, embedding) VALUES (?, vec_quantize_binary(?))", (memory_id, vector))

    async def recall(self, query: str, top_k: int | None = None) -> list[Recalled]:
        vectors = await self._vectors_for([query], cache=False)  # one-off queries are not cached (SD card)
        vector = vectors[0] if vectors else None
        table = BITS_TABLE if vector is not None else None
        return await self.db.call(lambda con: search(con, query, vector, self.config, top_k or self.config.top_k, table))

    async def forget(self, id_or_key: str) -> bool:
        def delete(con: apsw.Connection) -> bool:
            with transaction(con):
                column = "id" if id_or_key.isdigit() else "key"
                row = con.execute(f"DELETE FROM memories WHERE {column} = ? RETURNING id", (id_or_key,)).fetchone()
                if row and self.mode == "vectors":
                    con.execute(f"DELETE FROM {BITS_TABLE} WHERE rowid = ?", (row[0],))
                return row is not None

        return await self.db.call(delete)

    async def all(self, category: str | None = None) -> list[Memory]:
        where, args = ("WHERE category = ?", (category,)) if category else ("", ())
        rows = await self.db.call(lambda con: con.execute(
            f"SELECT id, content, category, key, updated_at FROM memories {where} ORDER BY id", args).fetchall())
        return [Memory(*row) for row in rows]

    async def stats(self) -> dict[str, Any]:
        def count(con: apsw.Connection) -> dict[str, Any]:
            by_category = dict(con.execute("SELECT category, count(*) FROM memories GROUP BY category").fetchall())
            vectors = con.execute("SELECT count(*) FROM memory_vectors").fetchone()[0]
            return {"memories": sum(by_category.values()), "by_category": by_category, "with_vectors": vectors,
                    "identity": _kv(con, IDENTITY_KEY) or "none"}

        return {**await self.db.call(count), "mode": self.mode, "problem": self.problem}

    async def reindex(self) -> int:
        """Re-embed every memory with the configured model (dropping other models' vectors); returns how many."""
        if self.embedder is None:
            raise StorageError("no [memory] embedding_model is configured: there is nothing to index with")
        if not self.db.vectors:
            raise StorageError("sqlite-vec is not available on this system")
        memories = await self.all()
        vectors = await self.embedder.embed([m.content for m in memories]) if memories else []
        identity, dims = self.embedder.identity, self.embedder.dims

        def rebuild(con: apsw.Connection) -> None:
            with transaction(con):
                con.execute("DELETE FROM memory_vectors")
                con.execute(f"DROP TABLE IF EXISTS {BITS_TABLE}")
                _create_bits_table(con, dims)
                for memory, vector in zip(memories, vectors, strict=True):
                    self._store_vector(con, memory.id, vector)
                con.execute("INSERT OR REPLACE INTO kv (key, value) VALUES (?, ?)", (IDENTITY_KEY, identity))

        await self.db.call(rebuild)
        self.mode, self.problem = "vectors", ""
        return len(memories)

    async def hygiene(self, now: float | None = None) -> dict[str, int]:
        """Archive old daily notes, purge old archived and conversation memories. One transaction."""
        now = now or time.time()
        day = 86400
        config = self.config

        def tidy(con: apsw.Connection) -> dict[str, int]:
            with transaction(con):
                archived = con.execute("UPDATE memories SET category = 'archived' WHERE category = 'daily'"
                                       " AND updated_at < ? RETURNING id", (now - config.daily_archive_days * day,)).fetchall()
                purged = con.execute(
                    "DELETE FROM memories WHERE (category = 'archived' AND updated_at < ?) OR"
                    " (category = 'conversation' AND updated_at < ?) RETURNING id",
                    (now - config.archive_purge_days * day, now - config.conversation_retention_days * day)).fetchall()
                if purged and self.mode == "vectors":
                    con.executemany(f"DELETE FROM {BITS_TABLE} WHERE rowid = ?", purged)
            return {"archived": len(archived), "purged": len(purged)}

        return await self.db.call(tidy)

    async def write_snapshot(self, path: Path) -> int:
        """MEMORY_SNAPSHOT.md: every memory as Markdown, written atomically; a restored Pi hydrates from it."""
        memories = await self.all()
        lines = ["# Memory snapshot", "", "Written by edge. Kept so that a new or restored device can get its memory back.",
                 SNAPSHOT_MARK]
        for category in CATEGORIES:
            chosen = [m for m in memories if m.category == category]
            if chosen:
                lines += ["", f"## {category}", ""]
                lines += [f"- {f'[key: {m.key}] ' if m.key else ''}{m.content}" for m in chosen]
        await asyncio.to_thread(_write_atomically, path, "\n".join(lines) + "\n")
        return len(memories)

    async def hydrate(self, path: Path) -> int:
        """Load a snapshot into an empty memory store (a restored Pi); returns how many memories came back."""
        if await self.db.call(lambda con: con.execute("SELECT 1 FROM memories LIMIT 1").fetchone()):
            return 0
        text = await asyncio.to_thread(_read_if_present, path)
        if SNAPSHOT_MARK not in text:
            return 0
        return await self.import_items(parse_snapshot(text))

    async def import_items(self, items: list[dict[str, Any]]) -> int:
        """Add exported memories: one with the same words is skipped, one with a known key is updated."""
        chosen: list[tuple[str, str, str | None]] = []
        seen: set[str] = set()
        for item in items:
            category, content, key = item.get("category", "core"), str(item.get("content", "")), item.get("key") or None
            if category not in CATEGORIES or not content.strip() or content in seen or await self.known(content):
                continue
            seen.add(content)
            chosen.append((content, category, key))
        for start in range(0, len(chosen), IMPORT_BATCH):
            await self.remember_many(chosen[start:start + IMPORT_BATCH])
        return len(chosen)

    async def known(self, content: str) -> bool:
        """A memory with these very words exists already (case aside)."""
        content = " ".join(content.split())
        return await self.db.call(lambda con: con.execute(
            "SELECT 1 FROM memories WHERE content = ? COLLATE NOCASE LIMIT 1", (content,)).fetchone() is not None)

    async def backfill(self, batch: int = 64) -> int:
        """Embed memories stored while the embedding server was down; returns how many got a vector."""
        if self.mode != "vectors":
            return 0
        missing = await self.db.call(lambda con: con.execute(
            "SELECT id, content FROM memories WHERE id NOT IN (SELECT id FROM memory_vectors) LIMIT ?",
            (batch,)).fetchall())
        vectors = await self._vectors_for([content for _, content in missing]) if missing else None
        if not vectors:
            return 0

        def write(con: apsw.Connection) -> None:
            with transaction(con):
                for (memory_id, _), vector in zip(missing, vectors, strict=True):
                    if con.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone():
                        self._store_vector(con, memory_id, vector)

        await self.db.call(write)
        return len(missing)

    async def fingerprint(self) -> tuple[int, float, int]:
        """Changes whenever a memory is added, changed or removed: the snapshot is rewritten only then."""
        row = await self.db.call(lambda con: con.execute(
            "SELECT count(*), coalesce(max(updated_at), 0), coalesce(sum(id), 0) FROM memories").fetchone())
        return int(row[0]), float(row[1]), int(row[2])


def parse_snapshot(text: str) -> list[dict[str, Any]]:
    items, category = [], "core"
    for line in text.splitlines():
        if line.startswith("## ") and line[3:].strip() in CATEGORIES:
            category = line[3:].strip()
        elif match := _SNAPSHOT_LINE.match(line):
            items.append({"category": category, "key": match.group("key"), "content": match.group("content")})
    return items


def _create_bits_table(con: apsw.Connection, dims: int) -> None:
    # Chunks of 4096 rows instead of 1024: the brute-force bit scan at 100k memories is ~20% faster.
    con.execute(f"CREATE VIRTUAL TABLE IF NOT EXISTS {BITS_TABLE} USING vec0(embedding bit[{dims}], chunk_size=4096)")


def _kv(con: apsw.Connection, key: str) -> str | None:
    row = con.execute("SELECT value FROM kv WHERE key = ?", (key,)).fetchone()
    return row[0] if row else None


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.tmp")  # a full disk never leaves half a snapshot
    try:
        temporary.write_text(text, encoding="utf-8")
        temporary.replace(path)
    except OSError as exc:
        with contextlib.suppress(OSError):
            temporary.unlink(missing_ok=True)
        raise StorageError(f"cannot write {path} ({exc.strerror}); the previous snapshot is kept") from exc


def _read_if_present(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return ""
