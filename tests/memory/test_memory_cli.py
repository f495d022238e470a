"""`edge memory ...`, the doctor's memory line, upkeep, and the database faults: damage and a busy lock."""

from __future__ import annotations

import json
import threading

import apsw
import pytest

from edge.errors import StorageError
from edge.memory.db import Database
from edge.memory.memories import SNAPSHOT_NAME
from edge.memory.upkeep import MemoryUpkeep
from tests.conftest import edge_env, open_runtime, run_edge
from tests.fakes.llm_server import FakeModel, ScriptedLLM

VECTORS = {"EDGE_MEMORY__EMBEDDING_MODEL": "embed-model", "EDGE_MEMORY__DIMS": "64"}


def test_add_search_forget_export_import(tmp_path, llm: ScriptedLLM):
    env = edge_env(tmp_path, llm, **VECTORS)
    edge = lambda *args: run_edge(["memory", *args], env, tmp_path)  # noqa: E731
    assert edge("add", "The porch light is the relay on GPIO 17.", "--key", "porch").stdout == "remembered as #1\n"
    assert edge("add", "Ada waters the tomato plants at seven.", "--category", "daily").returncode == 0
    found = edge("search", "when are the plants watered")
    assert found.returncode == 0 and found.stdout.splitlines()[0].endswith("Ada waters the tomato plants at seven.")
    assert edge("search", "quantum chromodynamics").returncode == 1
    exported = edge("export")
    items = json.loads(exported.stdout)
    assert [(i["key"], i["category"]) for i in items] == [("porch", "core"), (None, "daily")]
    (tmp_path / "export.json").write_text(exported.stdout)
    assert edge("forget", "porch").stdout == "forgot porch\n"
    assert edge("forget", "porch").returncode == 1
    assert "imported 1 of 2" in edge("import", str(tmp_path / "export.json")).stdout  # the other is still there
    assert "imported 0 of 2" in edge("import", str(tmp_path / "export.json")).stdout  # never twice
    stats = edge("stats").stdout
    assert "memories     2 (core 1, daily 1)" in stats and "vectors      2 (ollama:embed-model:64)" in stats


def test_bad_input_is_refused_plainly(tmp_path, llm: ScriptedLLM):
    env = edge_env(tmp_path, llm)
    (tmp_path / "junk.json").write_text("this is not json")
    junk = run_edge(["memory", "import", str(tmp_path / "junk.json")], env, tmp_path)
    assert junk.returncode == 1 and "neither a JSON export" in junk.stderr and "Traceback" not in junk.stderr
    nothing = run_edge(["memory", "search"], env, tmp_path)
    assert nothing.returncode == 1 and "needs a query" in nothing.stderr
    no_model = run_edge(["memory", "reindex"], env, tmp_path)
    assert no_model.returncode == 1 and "no [memory] embedding_model" in no_model.stderr


def test_a_model_change_shows_in_doctor_and_reindex_fixes_it(tmp_path, llm: ScriptedLLM):
    llm.add_model(FakeModel("bigger-embed", dims=96))
    env = edge_env(tmp_path, llm, **VECTORS)
    assert run_edge(["memory", "add", "The cat is called Pixel."], env, tmp_path).returncode == 0
    changed = edge_env(tmp_path, llm, EDGE_MEMORY__EMBEDDING_MODEL="bigger-embed", EDGE_MEMORY__DIMS="96")
    doctor = run_edge(["doctor"], changed, tmp_path)
    line = next(x for x in doctor.stdout.splitlines() if " memory " in x)
    assert doctor.returncode == 1 and line.startswith("FAIL") and "edge memory reindex" in line
    reindex = run_edge(["memory", "reindex"], changed, tmp_path)
    assert reindex.stdout == "re-embedded 1 memories with ollama:bigger-embed:96\n"
    healthy = run_edge(["doctor"], changed, tmp_path)
    assert "hybrid recall with ollama:bigger-embed:96" in healthy.stdout


def test_doctor_says_when_the_embedding_server_is_down(tmp_path, llm: ScriptedLLM):
    env = edge_env(tmp_path, llm, **VECTORS)
    run_edge(["memory", "add", "The cat is called Pixel."], env, tmp_path)
    llm.embeddings_down = True
    doctor = run_edge(["doctor"], env, tmp_path)
    line = next(x for x in doctor.stdout.splitlines() if " memory " in x)
    assert line.startswith("FAIL") and "falls back to keywords" in line


def test_keyword_only_is_a_healthy_default(tmp_path, llm: ScriptedLLM):
    doctor = run_edge(["doctor"], edge_env(tmp_path, llm), tmp_path)
    line = next(x for x in doctor.stdout.splitlines() if " memory " in x)
    assert line.startswith("ok") and "keyword recall" in line


def test_a_damaged_database_is_detected_at_start_with_the_way_back(tmp_path, llm: ScriptedLLM):
    env = edge_env(tmp_path, llm)
    assert run_edge(["memory", "add", "The cat is called Pixel."], env, tmp_path).returncode == 0
    database = tmp_path / "state" / "edge.db"
    con = apsw.Connection(str(database))
    root = con.execute("SELECT rootpage FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
    page = con.execute("PRAGMA page_size").fetchone()[0]
    con.close()
    data = bytearray(database.read_bytes())
    data[(root - 1) * page: root * page] = b"\xa5" * page  # scribble over the memories table; the header is intact
    database.write_bytes(bytes(data))
    for command in (["memory", "stats"], ["agent", "-m", "hi"]):
        result = run_edge(command, env, tmp_path)
        assert result.returncode == 1 and "is damaged" in result.stderr, result.stderr
        assert "MEMORY_SNAPSHOT.md" in result.stderr and f"mv {database} {database}.damaged" in result.stderr


async def test_a_busy_database_is_retried_within_a_bound(tmp_path):
    path = tmp_path / "edge.db"
    async with Database(path):
        pass  # create it
    holder = apsw.Connection(str(path))
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    async with Database(path, busy_timeout_ms=200) as db:
        with pytest.raises(StorageError, match="stayed locked"):
            await db.call(lambda con: con.execute("INSERT INTO kv VALUES ('a', '1')"))
        db.busy_timeout_ms = 5000
        await db.call(lambda con: con.setbusytimeout(5000))
        # The lock is released while the write is (almost surely) retrying; either way it must succeed.
        threading.Timer(0.2, lambda: holder.execute("COMMIT")).start()
        await db.call(lambda con: con.execute("INSERT INTO kv VALUES ('b', '2')"))
        value = await db.call(lambda con: con.execute("SELECT value FROM kv WHERE key = 'b'").fetchone()[0])
    assert value == "2"


async def test_upkeep_adds_missing_vectors_and_writes_the_snapshot_only_on_change(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory={"embedding_model": "embed-model", "dims": 64}) as rt:
        snapshot = rt.config.workspace / SNAPSHOT_NAME
        upkeep = MemoryUpkeep(rt.memories, snapshot, 3600)
        assert (await upkeep.tidy())["snapshot"] == 0 and not snapshot.exists()  # nothing to keep yet
        llm.embeddings_down = True
        await rt.memories.remember("The greenhouse sensor is the Arduino on USB.")
        llm.embeddings_down = False
        first = await upkeep.tidy()
        written = snapshot.stat().st_mtime_ns
        second = await upkeep.tidy()
        stats = await rt.memories.stats()
    assert first["embedded"] == 1 and first["snapshot"] == 1 and stats["with_vectors"] == 1
    assert second["snapshot"] == 0 and snapshot.stat().st_mtime_ns == written
    assert "The greenhouse sensor is the Arduino on USB." in snapshot.read_text()


async def test_a_snapshot_that_cannot_be_written_keeps_the_old_one(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm) as rt:
        snapshot = rt.config.workspace / SNAPSHOT_NAME
        await rt.memories.remember("The cat is called Pixel.")
        await MemoryUpkeep(rt.memories, snapshot, 3600).tidy()
        kept = snapshot.read_text()
        await rt.memories.remember("The dog is called Rex.")
        blocker = snapshot.with_name(f".{SNAPSHOT_NAME}.tmp")
        blocker.mkdir()  # the temporary file cannot be written, as on a full disk
        with pytest.raises(StorageError, match="the previous snapshot is kept"):
            await MemoryUpkeep(rt.memories, snapshot, 3600).tidy()
    assert snapshot.read_text() == kept
