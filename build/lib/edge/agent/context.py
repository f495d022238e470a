"""What the model sees: the system prompt from the workspace files, the context size, and history that fits.

The system prompt and the tool list are byte-stable from turn to turn (no clock, no counters), so the
model server can reuse its KV cache for the whole prefix.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from edge.config import AgentConfig, ProviderConfig
from edge.providers.base import ModelInfo

PROMPT_FILES = ("AGENTS.md", "SOUL.md", "USER.md", "TOOLS.md", "MEMORY.md")
SMALL_PARAMETERS_B = 4.0
SMALL_CONTEXT = 8192
CONTEXT_STEPS = (4096, 8192, 16384, 32768, 65536, 131072)
_BASE_PROMPT = "You are edge, a personal assistant on a small home computer. Answer briefly."
_TEXT_TOOLS_PROMPT = (
    "\n\n## Tools\nTo use a tool, reply with only this and nothing else:\n"
    '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>\n'
    "You will get the result back, then answer the user. Tools:\n"
)


def estimate_tokens(text: str) -> int:
    """A deliberately high estimate (≈3.5 characters a token) so that what we send always fits."""
    return len(text) * 2 // 7 + 1


def message_tokens(message: dict[str, Any]) -> int:
    extra = orjson.dumps(message["tool_calls"]).decode() if message.get("tool_calls") else ""
    return estimate_tokens(message.get("content") or "") + estimate_tokens(extra) + 4


def is_small_model(config: AgentConfig, info: ModelInfo) -> bool:
    if config.small_model != "auto":
        return config.small_model == "on"
    small_size = info.parameters_b is not None and info.parameters_b <= SMALL_PARAMETERS_B
    small_context = info.context_length is not None and info.context_length <= SMALL_CONTEXT
    return small_size or small_context


def context_ceiling(provider: ProviderConfig, info: ModelInfo) -> int:
    """The most context edge will ask for: the configured bound, clipped to the model's maximum."""
    if info.context_length:
        return min(provider.num_ctx, info.context_length) if provider.num_ctx else info.context_length
    return provider.num_ctx or SMALL_CONTEXT


def choose_num_ctx(needed: int, ceiling: int) -> int:
    """A context size from a few fixed steps: Ollama reloads the model whenever num_ctx changes."""
    return min(next((step for step in CONTEXT_STEPS if step >= needed), ceiling), ceiling)


@dataclass
class _Cached:
    stamp: tuple[tuple[str, int, int], ...]
    text: str


class SystemPrompt:
    """Builds the system prompt from the workspace, re-reading files only when they change."""

    def __init__(self, workspace: Path, budget_tokens: int) -> None:
        self.workspace = workspace
        self.budget_tokens = budget_tokens
        self._cache: dict[tuple[bool, str], _Cached] = {}

    def build(self, small: bool, text_tools: list[dict[str, Any]]) -> str:
        """`text_tools`: specs to describe in the prompt when the model has no native tool calling."""
        tools_text = _describe_tools(text_tools)
        stamp = self._stamp()
        key = (small, tools_text)
        cached = self._cache.get(key)
        if cached is None or cached.stamp != stamp:
            budget = self.budget_tokens // 2 if small else self.budget_tokens
            text = _BASE_PROMPT + self._workspace_text(budget) + (_TEXT_TOOLS_PROMPT + tools_text if tools_text else "")
            cached = self._cache[key] = _Cached(stamp, text)
        return cached.text

    def _stamp(self) -> tuple[tuple[str, int, int], ...]:
        stamps = []
        for name in PROMPT_FILES:
            try:
                stat = (self.workspace / name).stat()
            except OSError:
                continue
            stamps.append((name, stat.st_mtime_ns, stat.st_size))
        return tuple(stamps)

    def _workspace_text(self, budget_tokens: int) -> str:
        parts = []
        remaining = budget_tokens * 7 // 2  # in characters
        for name in PROMPT_FILES:
            try:
                text = (self.workspace / name).read_text(encoding="utf-8", errors="replace").strip()
            except OSError:
                continue
            if not text or _is_placeholder(text) or remaining <= 0:
                continue
            if len(text) > remaining:
                text = text[:remaining].rsplit("\n", 1)[0] + f"\n[… rest of {name} left out to fit the context]"
            parts.append(f"\n\n<!-- {name} -->\n{text}")
            remaining -= len(text)
        return "".join(parts)


def _is_placeholder(text: str) -> bool:
    """A template nobody has filled in yet (a heading and a parenthesised hint) is not worth its tokens."""
    body = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    return bool(body) and body[0].startswith("(") and body[-1].rstrip().endswith(")")


def _describe_tools(specs: list[dict[str, Any]]) -> str:
    lines = []
    for spec in specs:
        function = spec["function"]
        params = ", ".join(
            f"{name}: {schema.get('type')}" + ("" if name in function["parameters"]["required"] else "?")
            for name, schema in function["parameters"]["properties"].items()
        )
        lines.append(f"- {function['name']}({params}): {function['description']}")
    return "\n".join(lines)


def fit_history(history: list[dict[str, Any]], budget_tokens: int) -> list[dict[str, Any]]:
    """The most recent whole turns that fit the budget. Cuts only before a user message, so a tool
    result never loses the assistant message that asked for it."""
    total = 0
    start = len(history)
    for index in range(len(history) - 1, -1, -1):
        total += message_tokens(history[index])
        if total > budget_tokens:
            break
        if history[index]["role"] == "user":
            start = index
    return history[start:]
