"""Memory on a real apsw database with sqlite-vec, embeddings from the scripted server."""

from __future__ import annotations

import time

import pytest

from edge.memory.memories import SNAPSHOT_NAME, parse_snapshot
from edge.memory.recall import query_words
from tests.conftest import Recorder, open_runtime
from tests.fakes.llm_server import ScriptedLLM

VECTORS = {"embedding_model": "embed-model", "dims": 64}
FACTS = ["The porch light is the relay on GPIO 17.", "Ada waters the tomato plants every morning at seven.",
         "The wifi password is taped under the router.", "The greenhouse sensor is the Arduino on USB.",
         "Ada's sister Grace visits on Sundays."]


async def test_hybrid_recall_finds_by_meaning_and_keywords(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        memories = rt.memories
        for fact in FACTS:
            await memories.remember(fact)
        found = await memories.recall("when are the plants watered?")
        assert memories.mode == "vectors"
    assert found[0].content == FACTS[1] and all(m.score >= 0.4 for m in found)
    assert len(found) <= 5


async def test_keyword_only_works_offline_out_of_the_box(tmp_path):
    async with open_runtime(tmp_path, None) as rt:  # no embedding model configured, no server at all
        for fact in FACTS:
            await rt.memories.remember(fact)
        found = await rt.memories.recall("wifi password")
        nothing = await rt.memories.recall("quantum chromodynamics")
        mode = rt.memories.mode
    assert mode == "keywords" and found[0].content == FACTS[2] and nothing == []


async def test_update_by_key_and_forget(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        memories = rt.memories
        first = await memories.remember("The boiler service is in May.", key="boiler")
        second = await memories.remember("The boiler service is in June.", key="boiler")
        assert first == second and [m.content for m in await memories.all()] == ["The boiler service is in June."]
        assert (await memories.recall("boiler service"))[0].content.endswith("June.")
        assert await memories.forget("boiler") and not await memories.forget("boiler")
        assert await memories.recall("boiler service") == []
        stats = await memories.stats()
    assert stats["memories"] == 0 and stats["with_vectors"] == 0


async def test_embeddings_are_cached_by_content(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        await rt.memories.remember("The cat is called Pixel.")
        await rt.memories.remember("The cat is called Pixel.", key="cat")
        calls = llm.embed_calls
    assert calls == 1


async def test_vectors_survive_a_restart_and_a_model_change_needs_reindex(tmp_path, llm: ScriptedLLM):
    from tests.fakes.llm_server import FakeModel

    llm.add_model(FakeModel("bigger-embed", dims=96))
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        for fact in FACTS:
            await rt.memories.remember(fact)
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:  # restart: same model
        assert rt.memories.mode == "vectors" and (await rt.memories.recall("tomato plants"))[0].content == FACTS[1]
    changed = {"embedding_model": "bigger-embed", "dims": 96}
    async with open_runtime(tmp_path, llm, memory=changed) as rt:
        assert rt.memories.mode == "keywords" and "edge memory reindex" in rt.memories.problem
        assert (await rt.memories.recall("tomato plants"))[0].content == FACTS[1]  # keywords still work
        assert await rt.memories.reindex() == len(FACTS)
        assert rt.memories.mode == "vectors"
        stats = await rt.memories.stats()
    assert stats["identity"] == "ollama:bigger-embed:96" and stats["with_vectors"] == len(FACTS)


async def test_wrong_dims_are_explained(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory={"embedding_model": "embed-model", "dims": 384}) as rt:
        await rt.memories.remember("a fact")  # stored anyway, without a vector
        problem = rt.memories.problem
        count = (await rt.memories.stats())["memories"]
    assert "makes 64-dimensional vectors, not 384: set [memory] dims = 64" in problem and count == 1


async def test_embedding_server_down_degrades_to_keywords(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        await rt.memories.remember("The garage door code is 4711.")
        llm.embeddings_down = True
        found = await rt.memories.recall("garage door code")
        stored = await rt.memories.remember("The shed key hangs by the door.")
    assert found[0].content == "The garage door code is 4711." and stored > 0
    assert "not available" in rt.memories.problem


async def test_remember_that_needs_no_model_and_memories_reach_the_next_turn(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        session = await rt.store.current_session("t")
        noted = await rt.agent.turn(session, "Remember that the spare key is in the blue flowerpot.", Recorder())
        assert llm.chats() == []  # no model round trip
        await rt.agent.turn(await rt.store.new_session("t"), "where is the spare key?", Recorder())
    assert noted.text.startswith("Noted. I will remember that the spare key is in the blue flowerpot.")
    request = llm.chats()[0]["messages"]
    assert "the spare key is in the blue flowerpot" in request[-1]["content"]  # recalled into this turn
    assert request[-1]["content"].endswith("where is the spare key?")
    assert "flowerpot" not in request[0]["content"]  # never in the system prompt: it stays byte-stable


async def test_remember_questions_are_not_stored(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm) as rt:
        await rt.agent.turn(await rt.store.current_session("t"), "Remember when we went to the lake?", Recorder())
        assert (await rt.memories.stats())["memories"] == 0 and len(llm.chats()) == 1


async def test_memory_tools_through_the_model(tmp_path, llm: ScriptedLLM):
    from tests.fakes.llm_server import Step

    llm.script(Step(tool_calls=[{"name": "memory_store", "arguments": {"content": "Grace likes jasmine tea.", "key": "grace-tea"}}]),
               "Stored.",
               Step(tool_calls=[{"name": "memory_recall", "arguments": {"query": "what tea does Grace like"}}]),
               "Jasmine.")
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        session = await rt.store.current_session("t")
        await rt.agent.turn(session, "note Grace's tea", Recorder())
        await rt.agent.turn(session, "what tea?", Recorder())
    assert "Grace likes jasmine tea." in llm.chats()[3]["messages"][-1]["content"]


async def test_hygiene_archives_and_purges_by_age(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory={"daily_archive_days": 30, "archive_purge_days": 365,
                                                   "conversation_retention_days": 90}) as rt:
        old_daily = await rt.memories.remember("Watered the plants", "daily")
        await rt.memories.remember("Ada prefers tea", "core")
        await rt.memories.remember("We talked about the lake", "conversation")
        future = time.time() + 40 * 86400
        first = await rt.memories.hygiene(now=future)
        categories = {m.id: m.category for m in await rt.memories.all()}
        second = await rt.memories.hygiene(now=time.time() + 400 * 86400)
        left = [m.content for m in await rt.memories.all()]
    assert first == {"archived": 1, "purged": 0} and categories[old_daily] == "archived"
    assert second == {"archived": 0, "purged": 2} and left == ["Ada prefers tea"]  # core memories stay


async def test_snapshot_and_hydration_bring_a_restored_pi_back(tmp_path, llm: ScriptedLLM):
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        for fact in FACTS[:3]:
            await rt.memories.remember(fact)
        await rt.memories.remember("Today: fixed the fence", "daily", key="fence")
        snapshot = rt.config.workspace / SNAPSHOT_NAME
        assert await rt.memories.write_snapshot(snapshot) == 4
    (tmp_path / "state" / "edge.db").unlink()  # the SD card died; the workspace was backed up
    for suffix in ("-wal", "-shm"):
        (tmp_path / "state" / f"edge.db{suffix}").unlink(missing_ok=True)
    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        restored = await rt.memories.all()
        found = await rt.memories.recall("tomato plants")
    assert sorted(m.content for m in restored) == sorted([*FACTS[:3], "Today: fixed the fence"])
    assert {m.key for m in restored if m.key} == {"fence"} and found[0].content == FACTS[1]


def test_snapshot_format_round_trip():
    text = "<!-- edge memory snapshot v1 -->\n## core\n- [key: k1] one\n- two\n## daily\n- three\n"
    assert parse_snapshot(text) == [{"category": "core", "key": "k1", "content": "one"},
                                    {"category": "core", "key": None, "content": "two"},
                                    {"category": "daily", "key": None, "content": "three"}]


@pytest.mark.parametrize(("text", "words"), [('he said "hi" OR NOT', ["he", "said", "hi", "or", "not"]),
                                             ("a*b:c", []), ("wifi -- password", ["wifi", "password"])])
def test_user_text_cannot_break_the_keyword_query(text, words):
    assert query_words(text) == words


async def test_words_most_memories_hold_do_not_slow_recall_down(tmp_path, llm: ScriptedLLM):
    from edge.memory.recall import COMMON_WORD_MEMORIES, telling_words

    async with open_runtime(tmp_path, llm, memory=VECTORS) as rt:
        await rt.memories.remember_many([(f"note {n} about the garden", "core", None)
                                         for n in range(COMMON_WORD_MEMORIES + 1)])
        await rt.memories.remember("The porch light is on GPIO 17.")
        with_vectors = await rt.db.call(lambda con: telling_words(con, "the porch note", True))
        keywords_only = await rt.db.call(lambda con: telling_words(con, "the note", False))
        found = await rt.memories.recall("porch note")
    assert with_vectors == '"porch"'  # "the" and "note" are in every memory: they would rank 2,000 rows
    assert keywords_only == '"the" OR "note"'  # without vectors a common word is better than none
    assert found[0].content == "The porch light is on GPIO 17."
