"""`edge doctor`: checks that edge can work here, each with a fix when it cannot; healthy = exit code 0."""

from __future__ import annotations

import asyncio
import os
import shutil
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from edge.agent.context import choose_num_ctx, context_ceiling, is_small_model
from edge.app import Runtime
from edge.errors import EdgeError
from edge.memory.db import RESTORE_HINT

MIN_FREE_DISK_MB = 100


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str


async def run_checks(runtime: Runtime) -> list[Check]:
    checks = [Check("config", True, runtime.config.source)]
    for name, probe in _PROBES:
        try:
            ok, detail = await probe(runtime)
        except EdgeError as exc:
            ok, detail = False, str(exc)
        checks.append(Check(name, ok, detail))
    return checks


async def _provider(runtime: Runtime) -> tuple[bool, str]:
    models = await runtime.provider.models()
    return True, f"{runtime.provider.label} answers ({len(models)} model{'s' * (len(models) != 1)} available)"


async def _model(runtime: Runtime) -> tuple[bool, str]:
    provider = runtime.provider
    model = provider.config.model
    models = await provider.models()
    if model in models or f"{model}:latest" in models:
        return True, f"{model} is available"
    hint = f"run `ollama pull {model}`" if provider.config.kind == "ollama" else "check [provider] model"
    return False, f"{model} is not offered by the server ({', '.join(models[:6]) or 'none'}); {hint}"


async def _capabilities(runtime: Runtime) -> tuple[bool, str]:
    info = await runtime.provider.info()
    small = is_small_model(runtime.config.agent, info)
    ceiling = context_ceiling(runtime.provider.config, info)
    tools = "native" if info.native_tools else "parsed from text (the model has no tool support)"
    size = f"{info.parameters_b:g}B" if info.parameters_b else "unknown size"
    maximum = info.context_length or "unknown"
    offered = len(runtime.registry.offered(small))
    return True, (f"{size}, max context {maximum}, num_ctx {choose_num_ctx(0, ceiling)}–{ceiling}; "
                  f"tools {tools}; small-model mode {'on' if small else 'off'} ({offered} tools offered)")


async def _workspace(runtime: Runtime) -> tuple[bool, str]:
    workspace = runtime.config.workspace
    probe = workspace / ".edge-doctor"
    try:
        workspace.mkdir(parents=True, exist_ok=True)
        probe.write_text("ok")
        probe.unlink()
    except OSError as exc:
        return False, f"cannot write {workspace} ({exc.strerror}); fix its owner or set [paths] workspace"
    return True, f"{workspace} is writable"


async def _database(runtime: Runtime) -> tuple[bool, str]:
    result = await runtime.db.call(lambda con: con.execute("PRAGMA quick_check").fetchone()[0])
    if result != "ok":
        return False, f"{runtime.db.path} is damaged ({result}); " + RESTORE_HINT.format(path=runtime.db.path)
    return True, f"{runtime.db.path} is sound"


async def _disk(runtime: Runtime) -> tuple[bool, str]:
    free_mb = shutil.disk_usage(runtime.config.state_dir).free // 1_000_000
    if free_mb < MIN_FREE_DISK_MB:
        return False, f"only {free_mb} MB free under {runtime.config.state_dir}; free some space"
    return True, f"{free_mb} MB free"


async def _clock(runtime: Runtime) -> tuple[bool, str]:
    # A Pi has no RTC: before NTP syncs it believes it is 1970, and schedules fire wrong.
    year = time.gmtime().tm_year
    if year < 2025:
        return False, f"the clock says {year}; connect to the network so NTP can set it (timedatectl)"
    return True, time.strftime("%Y-%m-%d %H:%M %Z") + (" (TZ " + os.environ["TZ"] + ")" if os.environ.get("TZ") else "")


async def _gpio(runtime: Runtime) -> tuple[bool, str]:
    return await asyncio.to_thread(_gpio_access, runtime)


async def _serial(runtime: Runtime) -> tuple[bool, str]:
    return await asyncio.to_thread(_serial_access, runtime)


def _gpio_access(runtime: Runtime) -> tuple[bool, str]:
    chips = sorted(Path("/dev").glob("gpiochip*"))
    denied = [str(chip) for chip in chips if not os.access(chip, os.R_OK | os.W_OK)]
    if denied:
        return False, (f"no access to {', '.join(denied)}: add the user to the gpio group "
                       "(sudo usermod -aG gpio $USER, then log in again)")
    board = runtime.hardware.gpio
    if board is None:
        return True, "no GPIO devices configured" + (f" ({len(chips)} GPIO chip(s) available)" if chips else "")
    factory = "simulated pins (no /dev/gpiochip* or no lgpio)" if board.simulated else "lgpio"
    return True, f"{len(board.devices)} device(s) on {factory}"


def _serial_access(runtime: Runtime) -> tuple[bool, str]:
    ports = runtime.hardware.ports
    if not ports:
        return True, "no serial ports configured"
    problems = []
    for name, port in ports.items():
        path = port.config.url
        if "://" in path or port.connected:
            continue
        if os.path.exists(path) and not os.access(path, os.R_OK | os.W_OK):
            problems.append(f"{name}: no access to {path}; add the user to the dialout group (sudo usermod -aG dialout $USER)")
        else:
            problems.append(f"{name}: {port.last_error}")
    if problems:
        return False, "; ".join(problems)
    return True, f"{len(ports)} port(s) connected: {', '.join(ports)}"


async def _memory(runtime: Runtime) -> tuple[bool, str]:
    memories = runtime.memories
    stats = await memories.stats()
    count = f"{stats['memories']} memories"
    if memories.embedder is None:
        return True, f"{count}; keyword recall (set [memory] embedding_model for recall by meaning)"
    if memories.mode != "vectors":
        return False, f"{count}; recall is keyword-only: {memories.problem}"
    try:
        await memories.embedder.embed(["edge doctor"], cache=False)
    except EdgeError as exc:
        return False, (f"{count}; the embedding model does not answer ({exc}): recall falls back to keywords "
                       f"until it does")
    missing = stats["memories"] - stats["with_vectors"]
    pending = f", {missing} waiting for a vector (added by the daemon's upkeep)" if missing else ""
    return True, f"{count}; hybrid recall with {stats['identity']}{pending}"


async def _scheduler(runtime: Runtime) -> tuple[bool, str]:
    jobs = await runtime.jobs.all()
    off = [job for job in jobs if not job.enabled]
    place = runtime.jobs.place
    where = (f"sun times for {place.latitude:.2f}, {place.longitude:.2f}" if place.latitude is not None
             else "no [location] set: sunrise/sunset schedules are unavailable")
    summary = f"{len(jobs)} job(s), time zone {place.zone}; {where}"
    if off:
        names = ", ".join(f"#{job.id} {job.name}" for job in off)
        return False, f"{summary}; turned off after failing: {names} (`edge cron history ID` says why)"
    return True, summary


_PROBES: list[tuple[str, Callable[[Runtime], Awaitable[tuple[bool, str]]]]] = [
    ("provider", _provider), ("model", _model), ("capabilities", _capabilities), ("workspace", _workspace),
    ("database", _database), ("memory", _memory), ("scheduler", _scheduler),
    ("disk", _disk), ("clock", _clock), ("gpio", _gpio), ("serial", _serial),
]


def render(checks: list[Check]) -> str:
    width = max(len(c.name) for c in checks)
    lines = [f"{'ok ' if c.ok else 'FAIL'} {c.name:<{width}}  {c.detail}" for c in checks]
    healthy = all(c.ok for c in checks)
    lines.append("healthy" if healthy else "not healthy: fix the FAIL lines above")
    return "\n".join(lines)
