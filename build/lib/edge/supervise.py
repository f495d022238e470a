"""Run a service forever: restart it with exponential backoff when it fails, and keep its health state.

A service is `async def run(started)`: it calls `started()` once it is ready to work, then runs until
cancelled. A crash is logged, counted and retried after 1 s, 2 s, 4 s ... up to 60 s; the delay resets
once the service has run for a stable period. Cancellation is the only way to stop it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

log = logging.getLogger(__name__)
Service = Callable[[Callable[[], None]], Awaitable[None]]
Status = Literal["starting", "up", "failed", "stopped"]


@dataclass
class ComponentHealth:
    name: str
    status: Status = "starting"
    restarts: int = 0
    last_error: str = ""
    since: float = field(default_factory=time.time)
    settled: asyncio.Event = field(default_factory=asyncio.Event)  # set once it first came up or failed

    def set(self, status: Status, error: str = "") -> None:
        self.status, self.since = status, time.time()
        if error:
            self.last_error = error
        if status in ("up", "failed"):
            self.settled.set()


class Health:
    """Health of every supervised component, for /health, /metrics, STATUS= and `edge status`."""

    def __init__(self) -> None:
        self.components: dict[str, ComponentHealth] = {}

    def component(self, name: str) -> ComponentHealth:
        return self.components.setdefault(name, ComponentHealth(name))

    @property
    def healthy(self) -> bool:
        return all(c.status == "up" for c in self.components.values())

    def summary(self) -> str:
        return ", ".join(f"{c.name} {c.status}" for c in self.components.values())


async def supervise(name: str, service: Service, health: Health, *, first_delay: float = 1.0,
                    max_delay: float = 60.0, stable_after: float = 120.0) -> None:
    state = health.component(name)
    delay = first_delay
    while True:
        started_at = time.monotonic()
        state.set("starting")
        try:
            await service(lambda: state.set("up"))
            raise RuntimeError("the service returned without being cancelled")
        except asyncio.CancelledError:
            state.set("stopped")
            raise
        except Exception as exc:  # any failure of one service is contained here, by design
            if time.monotonic() - started_at >= stable_after:
                delay = first_delay  # it had been running fine: this is a fresh problem
            state.restarts += 1
            state.set("failed", f"{type(exc).__name__}: {exc}")
            log.error("%s failed (%s); restarting in %.0f s", name, state.last_error, delay, exc_info=exc)
            await asyncio.sleep(delay)
            delay = min(delay * 2, max_delay)
