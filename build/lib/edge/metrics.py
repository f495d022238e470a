"""Counters of what the daemon did, rendered as Prometheus text for `GET /metrics`."""

from __future__ import annotations

import os
from dataclasses import dataclass, fields

_PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


@dataclass
class Counters:
    turns_total: int = 0
    turn_errors_total: int = 0
    tool_calls_total: int = 0
    prompt_tokens_total: int = 0
    completion_tokens_total: int = 0
    messages_rejected_total: int = 0  # refused by the rate brake or a full queue


def resident_bytes() -> int:
    """RSS from /proc/self/statm: cheaper than importing psutil for one number."""
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * _PAGE_SIZE
    except (OSError, ValueError, IndexError):
        return 0


def render(counters: Counters, gauges: dict[str, float], restarts: dict[str, int]) -> str:
    lines = []
    for item in fields(counters):
        lines += [f"# TYPE edge_{item.name} counter", f"edge_{item.name} {getattr(counters, item.name)}"]
    for name, value in gauges.items():
        lines += [f"# TYPE edge_{name} gauge", f"edge_{name} {value:g}"]
    lines.append("# TYPE edge_component_restarts_total counter")
    lines += [f'edge_component_restarts_total{{component="{name}"}} {count}' for name, count in restarts.items()]
    return "\n".join(lines) + "\n"
