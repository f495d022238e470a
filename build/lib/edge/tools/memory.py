"""Memory tools: the model stores, recalls and forgets long-term memories."""

from __future__ import annotations

from typing import Literal

from edge.errors import ToolError
from edge.memory.memories import Memories
from edge.tools.base import Tool, tool


def memory_tools(memories: Memories) -> list[Tool]:
    async def memory_store(content: str, key: str = "", category: Literal["core", "daily"] = "core") -> str:
        """Remember a fact for later conversations (the user's preferences, how things are set up).

        Args:
            content: the fact, as one short sentence.
            key: optional name for it; storing the same key again replaces the old fact.
            category: "core" for lasting facts, "daily" for today's notes.
        """
        memory_id = await memories.remember(content, category, key or None)
        return f"Remembered (memory #{memory_id})."

    async def memory_recall(query: str) -> str:
        """Look up what you remember about something.

        Args:
            query: what to look for, in a few words.
        """
        found = await memories.recall(query)
        if not found:
            return "Nothing relevant remembered."
        return "\n".join(f"#{m.id} ({m.category}, relevance {m.score:.2f}): {m.content}" for m in found)

    async def memory_forget(memory: str) -> str:
        """Forget a memory, by its number (#12 → "12") or its key.

        Args:
            memory: the memory's number or key.
        """
        if not await memories.forget(memory.lstrip("#")):
            raise ToolError(f"no memory {memory!r}; memory_recall shows numbers and keys")
        return "Forgotten."

    return [
        tool(memory_store, read_only=False, core=True),
        tool(memory_recall, core=True),
        tool(memory_forget, risk="medium", read_only=False),
    ]
