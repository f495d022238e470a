"""What a turn tells the channel while it runs (text as it streams, tool activity, notices) and its result."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from edge.tools.registry import ToolResult


@dataclass(frozen=True)
class Delta:
    text: str


@dataclass(frozen=True)
class ToolActivity:
    name: str
    arguments: Any
    result: ToolResult | None = None  # None: the call is starting


@dataclass(frozen=True)
class Notice:
    """Something the user should know about the answer (cut off, context truncated, a fallback used)."""

    text: str


TurnEvent = Delta | ToolActivity | Notice
Sink = Callable[[TurnEvent], Awaitable[None]]


async def discard(event: TurnEvent) -> None:
    """A sink for callers that only want the final result."""


@dataclass
class TurnResult:
    text: str
    tool_calls: int = 0
    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    notices: list[str] = field(default_factory=list)
    error: str | None = None  # set when the turn could not reach a model answer at all
