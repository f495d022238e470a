"""How TOML tables and EDGE_* strings become the frozen config dataclasses, checked field by field.

Every error names the file (or environment variable), the key, what was found and what was expected.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass
from typing import Any, Literal

from edge.errors import ConfigError


class Degrees(float):
    """A latitude or longitude: a signed number of degrees (plain floats in the config must be ≥ 0)."""


def env_overrides(environ: typing.Mapping[str, str]) -> dict[str, dict[str, tuple[str, str]]]:
    """EDGE_PROVIDER__MODEL=x → {"provider": {"model": ("x", "EDGE_PROVIDER__MODEL")}}."""
    result: dict[str, dict[str, Any]] = {}
    for name, value in environ.items():
        if not name.startswith("EDGE_") or "__" not in name:
            continue
        section, _, key = name[5:].lower().partition("__")
        result.setdefault(section, {})[key] = _FromEnv(value, name)
    return result


@dataclass(frozen=True)
class _FromEnv:
    """A value that arrived as a string from an environment variable; coerced by the field type."""

    text: str
    variable: str


def build(cls: type, data: object, source: str, prefix: str = "") -> Any:
    """An instance of the dataclass `cls` from a TOML table (and env strings), checked field by field."""
    if not isinstance(data, dict):
        raise ConfigError(source, prefix or "(top level)", data, "a table")
    hints = typing.get_type_hints(cls)
    known = {f.name: f for f in dataclasses.fields(cls) if f.name != "source"}  # Config.source: set by load()
    for key in data:
        if key not in known:
            import difflib  # only on this error path

            close = difflib.get_close_matches(key, known, n=1)
            hint = f"one of {', '.join(sorted(known))}" + (f" (did you mean {close[0]!r}?)" if close else "")
            raise ConfigError(source, _key(prefix, key), data[key], hint)
    values = {}
    for name in known:
        if name in data:
            values[name] = _coerce(hints[name], data[name], source, _key(prefix, name))
    return cls(**values)


def _key(prefix: str, name: str) -> str:
    if not prefix:
        return f"[{name}]"
    # "[provider]" + "model" → "[provider] model"; "[provider] fallbacks[0]" + "model" → "... fallbacks[0].model"
    return f"{prefix} {name}" if " " not in prefix else f"{prefix}.{name}"


def _coerce(hint: Any, value: Any, source: str, key: str) -> Any:
    origin = typing.get_origin(hint)
    if isinstance(value, _FromEnv):
        source, key, value = f"environment variable {value.variable}", key, _parse_env(hint, value.text)
    if dataclasses.is_dataclass(hint):
        return build(hint, value, source, key)
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise ConfigError(source, key, value, "one of " + ", ".join(repr(a) for a in allowed))
        return value
    if origin is tuple:
        item = typing.get_args(hint)[0]
        if not isinstance(value, list):
            raise ConfigError(source, key, value, "a list")
        return tuple(_coerce(item, v, source, f"{key}[{i}]") for i, v in enumerate(value))
    if hint is bool:
        if not isinstance(value, bool):
            raise ConfigError(source, key, value, "true or false")
        return value
    if hint is int:
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(source, key, value, "a whole number ≥ 0")
        return value
    if hint is Degrees:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not -180 <= value <= 180:
            raise ConfigError(source, key, value, "degrees from -180 to 180 (north and east are positive)")
        return Degrees(value)
    if hint is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
            raise ConfigError(source, key, value, "a number ≥ 0")
        return float(value)
    if hint is str:
        if not isinstance(value, str):
            raise ConfigError(source, key, value, "a string in quotes")
        return value
    raise TypeError(f"unsupported config type {hint}")


def _parse_env(hint: Any, text: str) -> Any:
    """Turn an environment string into the field's type; leave it a string when it does not parse."""
    if hint is bool:
        return {"1": True, "true": True, "yes": True, "0": False, "false": False, "no": False}.get(text.lower(), text)
    if hint in (int, float, Degrees):
        try:
            return hint(text)
        except ValueError:
            return text
    if typing.get_origin(hint) is tuple:
        return [part.strip() for part in text.split(",") if part.strip()]
    return text
