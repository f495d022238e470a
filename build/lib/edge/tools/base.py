"""A tool is a typed function; this module turns its signature and docstring into a spec and checks arguments.

    async def time_now(timezone: str = "") -> str:
        '''Tell the current date and time.

        Args:
            timezone: an IANA name such as "Europe/Paris"; empty for the device's zone.
        '''

becomes {"name": "time_now", "description": ..., "parameters": {JSON schema}} for the model, and
`check_arguments()` validates what the model sent, with messages the model can act on.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal

Risk = Literal["low", "medium", "high"]
ToolFunction = Callable[..., Awaitable[str]]
_JSON_TYPES = {str: "string", int: "integer", float: "number", bool: "boolean"}
_WRAPPER_KEYS = ("arguments", "parameters", "args", "input", "kwargs")


@dataclass(frozen=True)
class Tool:
    name: str
    function: ToolFunction
    description: str  # the docstring's first paragraph
    summary: str  # its first sentence: what small-model mode sends
    parameters: dict[str, Any]
    risk: Risk = "low"  # low runs freely; medium and high ask first when supervised
    read_only: bool = True  # the only tools allowed when autonomy is "readonly"
    core: bool = False  # offered to small models too
    timeout_s: float | None = None  # None: the configured default
    param_help: dict[str, str] = field(default_factory=dict)
    risk_of: Callable[[dict[str, Any]], Risk] | None = None  # a risk that depends on the arguments (which device)

    def risk_for(self, arguments: dict[str, Any]) -> Risk:
        return self.risk_of(arguments) if self.risk_of is not None else self.risk

    def spec(self, small: bool) -> dict[str, Any]:
        """The function spec in the shape both Ollama and OpenAI accept."""
        params = self.parameters
        if small:  # one-line descriptions, no per-argument prose: every token counts on a 4k context
            params = {**params, "properties": {k: _without_description(v) for k, v in params["properties"].items()}}
        return {
            "type": "function",
            "function": {"name": self.name, "description": self.summary if small else self.description, "parameters": params},
        }


def _without_description(schema: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in schema.items() if k != "description"}


def tool(
    function: ToolFunction, *, risk: Risk = "low", read_only: bool = True, core: bool = False,
    timeout_s: float | None = None, name: str | None = None, risk_of: Callable[[dict[str, Any]], Risk] | None = None,
) -> Tool:
    """Build a Tool from an async function's signature and docstring."""
    doc = inspect.getdoc(function) or ""
    description, param_help = _parse_docstring(doc)
    if not description:
        raise ValueError(f"tool {function.__name__} needs a docstring: it is what the model reads")
    hints = typing.get_type_hints(function)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for param in inspect.signature(function).parameters.values():
        schema = _schema_for(hints[param.name])
        if param.name in param_help:
            schema["description"] = param_help[param.name]
        properties[param.name] = schema
        if param.default is inspect.Parameter.empty:
            required.append(param.name)
    parameters = {"type": "object", "properties": properties, "required": required}
    summary = re.split(r"(?<=[.!?])\s", description, maxsplit=1)[0]
    return Tool(
        name=name or function.__name__, function=function, description=description, summary=summary,
        parameters=parameters, risk=risk, read_only=read_only, core=core, timeout_s=timeout_s, param_help=param_help,
        risk_of=risk_of,
    )


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    head, _, args_section = doc.partition("\nArgs:\n")
    description = " ".join(head.split("\n\n")[0].split())
    param_help: dict[str, str] = {}
    current = None
    for line in args_section.splitlines():
        match = re.match(r"\s+(\w+):\s*(.*)", line)
        if match and (len(line) - len(line.lstrip())) <= 4:
            current = match.group(1)
            param_help[current] = match.group(2).strip()
        elif current and line.strip():
            param_help[current] += " " + line.strip()
    return description, param_help


def _schema_for(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if origin is Literal:
        values = list(typing.get_args(hint))
        return {"type": _JSON_TYPES[type(values[0])], "enum": values}
    if origin is list:
        return {"type": "array", "items": _schema_for(typing.get_args(hint)[0])}
    if hint in _JSON_TYPES:
        return {"type": _JSON_TYPES[hint]}
    raise TypeError(f"tool parameter type {hint!r} is not supported")


def check_arguments(tool: Tool, arguments: object) -> tuple[dict[str, Any], list[str]]:
    """Validate (and gently coerce) the model's arguments. Returns (arguments, problems)."""
    if isinstance(arguments, str) and not arguments.strip():
        arguments = {}
    if not isinstance(arguments, dict):
        return {}, [f"arguments must be a JSON object, got {type(arguments).__name__}"]
    properties = tool.parameters["properties"]
    # Small models often nest the real arguments one level down: {"arguments": {...}}.
    if len(arguments) == 1:
        (key, inner), = arguments.items()
        if key in _WRAPPER_KEYS and key not in properties and isinstance(inner, dict):
            arguments = inner
    problems: list[str] = []
    result: dict[str, Any] = {}
    for key, value in arguments.items():
        if key not in properties:
            allowed = ", ".join(properties) or "none"
            problems.append(f"unknown argument {key!r} (allowed: {allowed})")
            continue
        value, problem = _coerce(value, properties[key])
        if problem:
            problems.append(f"argument {key!r}: {problem}")
        else:
            result[key] = value
    for key in tool.parameters["required"]:
        if key not in arguments:
            problems.append(f"missing required argument {key!r} ({_describe(properties[key])})")
    return result, problems


def _coerce(value: Any, schema: dict[str, Any]) -> tuple[Any, str | None]:
    kind = schema["type"]
    if kind == "array":
        if not isinstance(value, list):
            return value, f"expected a list, got {value!r}"
        items = [_coerce(v, schema["items"]) for v in value]
        problem = next((p for _, p in items if p), None)
        return [v for v, _ in items], problem
    # Numbers and booleans sent as strings ("5", "true") are accepted: a common small-model habit.
    if kind == "integer" and isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        value = int(value)
    elif kind == "number" and isinstance(value, str):
        try:
            value = float(value)
        except ValueError:
            pass
    elif kind == "boolean" and isinstance(value, str) and value.lower() in ("true", "false"):
        value = value.lower() == "true"
    ok = {
        "string": isinstance(value, str),
        "integer": isinstance(value, int) and not isinstance(value, bool),
        "number": isinstance(value, (int, float)) and not isinstance(value, bool),
        "boolean": isinstance(value, bool),
    }[kind]
    if not ok:
        return value, f"expected {_describe(schema)}, got {value!r}"
    if "enum" in schema and value not in schema["enum"]:
        return value, f"expected {_describe(schema)}, got {value!r}"
    return value, None


def _describe(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "one of " + ", ".join(repr(v) for v in schema["enum"])
    return {"string": "a string", "integer": "an integer", "number": "a number", "boolean": "true or false",
            "array": "a list"}[schema["type"]]
