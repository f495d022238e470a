"""The guarded fallback parser: tool calls that a small model wrote as text instead of sending natively.

Recognised: `<tool_call>{...}</tool_call>` tags, fenced ```json blocks, bare JSON objects (or lists of
them) shaped like {"name": ..., "arguments": {...}}, and Python-style `name(key="value")` calls.
Guarded: only registered tool names, and only schema-valid arguments — unless the whole reply is the
call, in which case an invalid one is kept so the model can be told exactly what was wrong.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from edge.tools.base import Tool, check_arguments
from edge.tools.registry import ToolCall

_TAGGED = re.compile(r"<(tool_call|function_call|tools?)>\s*(.*?)\s*(?:</\1>|$)", re.S)
_FENCED = re.compile(r"```(?:json|tool_call|tool|python)?\s*\n?(.*?)```", re.S)
_PYTHONIC = re.compile(r"\[?\s*\b([a-z_][a-z0-9_]*)\s*\((.*?)\)\s*\]?", re.S)
_NAME_KEYS = ("name", "tool", "tool_name", "function")
_ARGUMENT_KEYS = ("arguments", "parameters", "args", "input")
_decoder = json.JSONDecoder()

Lookup = Callable[[str], Tool | None]


def could_be_tool_call(text: str) -> bool:
    """Does a reply that has only begun look like the start of a text tool call? (Hold it back if so.)"""
    start = text.lstrip()[:12]
    return start.startswith(("{", "[", "<tool", "<function", "```"))


def extract_tool_calls(text: str, lookup: Lookup) -> tuple[list[ToolCall], str]:
    """Find tool calls written in the text. Returns (calls, the text with those calls removed)."""
    whole = text.strip()
    calls: list[ToolCall] = []
    spans: list[tuple[int, int]] = []
    for start, end, candidate in _candidates(text, lookup):
        if any(start < s_end and end > s_start for s_start, s_end in spans):
            continue  # already taken by an enclosing tag or fence
        found = [c for c in _as_calls(candidate) if lookup(c[0]) is not None]
        accepted = [(n, a) for n, a in found if not check_arguments(lookup(n), a)[1]]  # type: ignore[arg-type]
        if not accepted and found and text[start:end].strip() == whole:
            accepted = found  # the reply is nothing but this call: keep it, so the model gets a repair message
        if accepted:
            spans.append((start, end))
            calls.extend(ToolCall(f"text_{len(calls) + i}", n, a) for i, (n, a) in enumerate(accepted))
    remaining = text
    for start, end in sorted(spans, reverse=True):
        remaining = remaining[:start] + remaining[end:]
    return calls, remaining.strip()


def _candidates(text: str, lookup: Lookup) -> Iterator[tuple[int, int, Any]]:
    """(start, end, parsed value) for every place that may hold a call, outermost forms first."""
    for pattern in (_TAGGED, _FENCED):
        for match in pattern.finditer(text):
            body = match.group(match.lastindex or 1)
            value = _loads(body)
            if value is None:
                value = _pythonic_calls(body, lookup)
            if value is not None:
                yield match.start(), match.end(), value
    index = 0
    while (index := _next_json_start(text, index)) != -1:
        try:
            value, end = _decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            index += 1
            continue
        yield index, end, value
        index = end
    # A Python-style call in prose ("I ran system_status() earlier") is not a request: only a reply that
    # is nothing but the call counts.
    match = _PYTHONIC.fullmatch(text.strip())
    if match and lookup(match.group(1)) is not None:
        value = _pythonic_calls(match.group(0), lookup)
        if value:
            yield 0, len(text), value


def _next_json_start(text: str, index: int) -> int:
    positions = [p for p in (text.find("{", index), text.find("[", index)) if p != -1]
    return min(positions) if positions else -1


def _loads(body: str) -> Any:
    try:
        return json.loads(body)
    except json.JSONDecodeError:
        return None


def _as_calls(value: Any) -> list[tuple[str, Any]]:
    """The (name, arguments) pairs in a parsed value, whatever common shape the model chose."""
    if isinstance(value, list):
        return [call for item in value for call in _as_calls(item)]
    if not isinstance(value, dict):
        return []
    if isinstance(value.get("function"), dict):  # {"type": "function", "function": {...}}
        return _as_calls(value["function"])
    if isinstance(value.get("tool_calls"), list):
        return _as_calls(value["tool_calls"])
    name = next((value[k] for k in _NAME_KEYS if isinstance(value.get(k), str)), None)
    if name is None:
        return []
    arguments = next((value[k] for k in _ARGUMENT_KEYS if k in value), {})
    if isinstance(arguments, str):
        arguments = _loads(arguments) if arguments.strip() else {}
    return [(name, arguments)]


def _pythonic_calls(body: str, lookup: Lookup) -> list[dict[str, Any]] | None:
    """`gpio_write(name="porch", state="on")` → [{"name": ..., "arguments": {...}}], literals only."""
    try:
        tree = ast.parse(body.strip().strip("[]"), mode="eval")
    except SyntaxError:
        return None
    nodes = tree.body.elts if isinstance(tree.body, ast.Tuple) else [tree.body]
    calls = []
    for node in nodes:
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and lookup(node.func.id)):
            return None
        try:
            arguments = {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords if kw.arg}
        except ValueError:
            return None
        calls.append({"name": node.func.id, "arguments": arguments})
    return calls or None
