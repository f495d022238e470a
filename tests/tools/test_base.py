"""Tool specs come from signatures and docstrings; arguments are checked with messages a model can act on."""

from __future__ import annotations

from typing import Literal

from edge.tools.base import check_arguments, tool


async def pulse(name: str, seconds: float = 1.0, mode: Literal["on", "off"] = "on", pins: list[int] = []) -> str:  # noqa: B006
    """Pulse a named output. Longer explanation that small models never see.

    Args:
        name: the configured device name.
        seconds: how long, in seconds;
            at most 10.
    """
    return "ok"


def make():
    return tool(pulse, risk="medium", read_only=False)


def test_schema_from_signature_and_docstring():
    spec = make().spec(small=False)["function"]
    assert spec["name"] == "pulse"
    assert spec["description"] == "Pulse a named output. Longer explanation that small models never see."
    props = spec["parameters"]["properties"]
    assert props["name"] == {"type": "string", "description": "the configured device name."}
    assert props["seconds"] == {"type": "number", "description": "how long, in seconds; at most 10."}
    assert props["mode"] == {"type": "string", "enum": ["on", "off"]}
    assert props["pins"] == {"type": "array", "items": {"type": "integer"}}
    assert spec["parameters"]["required"] == ["name"]


def test_small_spec_is_one_line_without_argument_prose():
    spec = make().spec(small=True)["function"]
    assert spec["description"] == "Pulse a named output."
    assert "description" not in spec["parameters"]["properties"]["name"]


def test_valid_arguments_are_coerced_from_strings():
    args, problems = check_arguments(make(), {"name": "porch", "seconds": "2.5", "pins": ["4", 5]})
    assert (args, problems) == ({"name": "porch", "seconds": 2.5, "pins": [4, 5]}, [])
    _, problems = check_arguments(make(), {"name": "porch", "pins": ["four"]})
    assert problems == ["argument 'pins': expected an integer, got 'four'"]


def test_every_problem_is_named():
    _, problems = check_arguments(make(), {"nme": "porch", "mode": "blink", "seconds": True})
    assert "unknown argument 'nme' (allowed: name, seconds, mode, pins)" in problems
    assert "argument 'mode': expected one of 'on', 'off', got 'blink'" in problems
    assert "argument 'seconds': expected a number, got True" in problems
    assert "missing required argument 'name' (a string)" in problems


def test_nested_arguments_are_unwrapped_and_non_objects_rejected():
    assert check_arguments(make(), {"parameters": {"name": "porch"}}) == ({"name": "porch"}, [])
    assert check_arguments(make(), "not json")[1] == ["arguments must be a JSON object, got str"]
