"""`edge memory search|add|forget|export|import|reindex|stats`: the memory store from the shell.

Opens only the database and the embedding model, never the hardware, so it runs beside the daemon.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import sys
from pathlib import Path
from typing import Any

import orjson

from edge.config import Config
from edge.errors import EdgeError
from edge.memory.memories import SNAPSHOT_MARK, Memories, parse_snapshot


async def run(config: Config, args: argparse.Namespace) -> int:
    from edge.app import open_memories
    from edge.memory.db import Database

    async with contextlib.AsyncExitStack() as stack:
        db = await stack.enter_async_context(Database(config.database))
        memories = await open_memories(config, db, stack)
        status = await _ACTIONS[args.action](memories, args)
    return status


def _need(args: argparse.Namespace, what: str) -> str:
    if not args.text:
        raise EdgeError(f"`edge memory {args.action}` needs {what}")
    return str(args.text)


async def _search(memories: Memories, args: argparse.Namespace) -> int:
    found = await memories.recall(_need(args, "a query"), args.top)
    for memory in found:
        key = f" [{memory.key}]" if memory.key else ""
        print(f"#{memory.id:<5} {memory.score:.2f} {memory.category:<12}{key} {memory.content}")
    if not found:
        print("nothing relevant", file=sys.stderr)
    _say_mode(memories)
    return 0 if found else 1


async def _add(memories: Memories, args: argparse.Namespace) -> int:
    memory_id = await memories.remember(_need(args, "the fact to remember"), args.category, args.key)
    print(f"remembered as #{memory_id}")
    _say_mode(memories)
    return 0


async def _forget(memories: Memories, args: argparse.Namespace) -> int:
    which = _need(args, "a memory's number or key").lstrip("#")
    if not await memories.forget(which):
        print(f"edge: no memory {which!r} (`edge memory search` shows numbers and keys)", file=sys.stderr)
        return 1
    print(f"forgot {which}")
    return 0


async def _export(memories: Memories, args: argparse.Namespace) -> int:
    items = [{"id": m.id, "key": m.key, "category": m.category, "content": m.content, "updated_at": m.updated_at}
             for m in await memories.all()]
    data = orjson.dumps(items, option=orjson.OPT_INDENT_2) + b"\n"
    if args.text:
        try:
            await asyncio.to_thread(Path(args.text).write_bytes, data)
        except OSError as exc:
            raise EdgeError(f"cannot write {args.text}: {exc.strerror}") from exc
        print(f"exported {len(items)} memories to {args.text}", file=sys.stderr)
    else:
        sys.stdout.buffer.write(data)
    return 0


async def _import(memories: Memories, args: argparse.Namespace) -> int:
    source = _need(args, "a file: a JSON export or a MEMORY_SNAPSHOT.md")
    try:
        text = await asyncio.to_thread(Path(source).read_text, encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise EdgeError(f"cannot read {source}: {exc}") from exc
    items = parse_snapshot(text) if SNAPSHOT_MARK in text else _parse_export(text, source)
    added = await memories.import_items(items)
    print(f"imported {added} of {len(items)} memories from {source} (the others were known already or empty)")
    return 0


def _parse_export(text: str, source: str) -> list[dict[str, Any]]:
    try:
        items = orjson.loads(text)
    except orjson.JSONDecodeError as exc:
        raise EdgeError(f"{source} is neither a JSON export (`edge memory export`) nor a MEMORY_SNAPSHOT.md: "
                        f"{exc}") from exc
    if not isinstance(items, list) or not all(isinstance(item, dict) for item in items):
        raise EdgeError(f"{source}: expected a JSON list of memories, as `edge memory export` writes")
    return items


async def _reindex(memories: Memories, args: argparse.Namespace) -> int:
    count = await memories.reindex()
    assert memories.embedder is not None  # reindex refuses without one
    print(f"re-embedded {count} memories with {memories.embedder.identity}")
    return 0


async def _stats(memories: Memories, args: argparse.Namespace) -> int:
    stats = await memories.stats()
    size = sum(p.stat().st_size for p in memories.db.path.parent.glob(memories.db.path.name + "*"))
    by_category = ", ".join(f"{k} {v}" for k, v in sorted(stats["by_category"].items())) or "none"
    print(f"memories     {stats['memories']} ({by_category})")
    print(f"vectors      {stats['with_vectors']} ({stats['identity']})")
    print(f"recall       {'hybrid: meaning and keywords' if stats['mode'] == 'vectors' else 'keywords only'}")
    print(f"database     {memories.db.path} ({size / 1e6:.1f} MB)")
    if stats["problem"]:
        print(f"problem      {stats['problem']}")
    return 0


def _say_mode(memories: Memories) -> None:
    if memories.problem:
        print(f"note: {memories.problem}", file=sys.stderr)


_ACTIONS = {"search": _search, "add": _add, "forget": _forget, "export": _export, "import": _import,
            "reindex": _reindex, "stats": _stats}
