"""Shared fixtures: the scripted model server, a config in a temp dir, and async tests without plugins."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import inspect
import os
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import pytest

from edge import config as config_module
from edge.agent.events import TurnEvent
from edge.app import Runtime, runtime
from tests.fakes.llm_server import ScriptedLLM

REPO = Path(__file__).resolve().parent.parent


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    """Run `async def` tests on a fresh event loop, with a hard timeout so a hang fails instead of stalling."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    kwargs = {name: pyfuncitem.funcargs[name] for name in names}
    asyncio.run(asyncio.wait_for(pyfuncitem.obj(**kwargs), timeout=30))
    return True


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with ScriptedLLM() as server:
        yield server


def make_config(tmp_path: Path, llm: ScriptedLLM | None = None, kind: str = "ollama", **sections: dict[str, Any]) -> config_module.Config:
    """A config whose state lives in tmp_path and whose provider is the scripted server."""
    provider: dict[str, Any] = {"kind": kind, "model": "test-model", "max_retries": 2, "timeout_s": 10.0}
    if llm is not None:
        provider["base_url"] = llm.ollama_url if kind == "ollama" else llm.openai_url
    provider.update(sections.pop("provider", {}))
    data = {"provider": provider, "paths": {"state_dir": str(tmp_path / "state")}, **sections}
    return config_module.build(config_module.Config, data, "test")


@contextlib.asynccontextmanager
async def open_runtime(tmp_path: Path, llm: ScriptedLLM | None = None, **sections: Any) -> AsyncIterator[Runtime]:
    async with runtime(make_config(tmp_path, llm, **sections)) as rt:
        yield rt


@contextlib.asynccontextmanager
async def running(*coroutines: Any) -> AsyncIterator[None]:
    """Run services in the background for the body of a `with`, then cancel them."""
    tasks = [asyncio.create_task(c) for c in coroutines]
    try:
        yield
    finally:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


class Recorder:
    """A sink that keeps every event a turn emits."""

    def __init__(self) -> None:
        self.events: list[TurnEvent] = []

    async def __call__(self, event: TurnEvent) -> None:
        self.events.append(event)

    def of(self, kind: type) -> list[Any]:
        return [e for e in self.events if isinstance(e, kind)]

    @property
    def text(self) -> str:
        from edge.agent.events import Delta

        return "".join(e.text for e in self.of(Delta))


def edge_env(tmp_path: Path, llm: ScriptedLLM | None, **extra: str) -> dict[str, str]:
    """Environment for an `edge` subprocess: its own state dir, the scripted server, no user config."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("EDGE_")}
    env.update(EDGE_PATHS__STATE_DIR=str(tmp_path / "state"), EDGE_PROVIDER__MODEL="test-model",
               EDGE_PROVIDER__MAX_RETRIES="1", HOME=str(tmp_path / "home"))
    if llm is not None:
        env["EDGE_PROVIDER__BASE_URL"] = llm.ollama_url
    env.update(extra)
    return env


def run_edge(args: list[str], env: dict[str, str], cwd: Path, stdin: str = "", timeout: float = 30) -> subprocess.CompletedProcess[str]:
    cwd.mkdir(parents=True, exist_ok=True)
    return subprocess.run([sys.executable, "-m", "edge", *args], env=env, cwd=cwd, input=stdin,
                          capture_output=True, text=True, timeout=timeout)


def replace(config: config_module.Config, **changes: Any) -> config_module.Config:
    return dataclasses.replace(config, **changes)
