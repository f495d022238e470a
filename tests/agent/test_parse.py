"""The fallback parser accepts calls written as text — only for registered tools with valid arguments."""

from __future__ import annotations

import pytest

from edge.agent.parse import extract_tool_calls
from edge.tools.system import system_tools

TOOLS = {t.name: t for t in system_tools(__import__("pathlib").Path("/"))}


def parse(text):
    return extract_tool_calls(text, TOOLS.get)


@pytest.mark.parametrize("text", [
    '{"name": "time_now", "arguments": {"timezone": "UTC"}}',
    '<tool_call>{"name": "time_now", "arguments": {"timezone": "UTC"}}</tool_call>',
    '<tool_call>\n{"name": "time_now", "arguments": "{\\"timezone\\": \\"UTC\\"}"}',  # unclosed tag, string arguments
    '```json\n{"function": {"name": "time_now", "parameters": {"timezone": "UTC"}}}\n```',
    '[{"name": "time_now", "arguments": {"timezone": "UTC"}}]',
    'time_now(timezone="UTC")',
    '[time_now(timezone="UTC")]',
])
def test_recognised_forms(text):
    calls, rest = parse(text)
    assert [(c.name, c.arguments) for c in calls] == [("time_now", {"timezone": "UTC"})]
    assert rest == ""


def test_surrounding_prose_is_kept():
    calls, rest = parse('Let me check. {"name": "system_status", "arguments": {}} One moment.')
    assert [c.name for c in calls] == ["system_status"] and rest == "Let me check.  One moment."


@pytest.mark.parametrize("text", [
    '{"name": "rm_everything", "arguments": {}}',  # not a registered tool
    'Example: {"name": "time_now", "arguments": {"zone": 1}} is how you would call it.',  # invalid, inside prose
    "I called time_now() earlier and it said noon.",  # a call mentioned in prose
    '{"name": "porch", "pin": 17}',
])
def test_not_accepted(text):
    assert parse(text)[0] == []


def test_invalid_call_alone_is_kept_for_a_repair_message():
    calls, _ = parse('{"name": "time_now", "arguments": {"zone": "UTC"}}')
    assert calls and calls[0].arguments == {"zone": "UTC"}


def test_several_calls():
    calls, _ = parse('<tool_call>{"name": "time_now", "arguments": {}}</tool_call>\n'
                     '<tool_call>{"name": "system_status", "arguments": {}}</tool_call>')
    assert [c.name for c in calls] == ["time_now", "system_status"]
