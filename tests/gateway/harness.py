"""A gateway with everything behind it (runtime, bus, agent loop) on aiohttp's test server."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp.test_utils import TestClient, TestServer

from edge.agent.loop import AgentLoop
from edge.app import Runtime
from edge.bus import Bus
from edge.gateway.auth import Clients, new_pairing_code
from edge.gateway.server import Gateway
from edge.metrics import Counters
from edge.platform.systemd import LoopMonitor, Notifier
from edge.supervise import Health
from tests.conftest import open_runtime
from tests.fakes.llm_server import ScriptedLLM


@dataclass
class Harness:
    client: TestClient
    gateway: Gateway
    runtime: Runtime
    bus: Bus
    counters: Counters

    async def pair(self, name: str = "tester") -> str:
        code = await new_pairing_code(self.runtime.db, 600)
        response = await self.client.post("/pair", headers={"X-Pairing-Code": code, "X-Client-Name": name})
        assert response.status == 200, await response.text()
        return (await response.json())["token"]

    @staticmethod
    def auth(token: str) -> dict[str, str]:
        return {"Authorization": f"Bearer {token}"}

    def url(self, path: str) -> str:
        return str(self.client.make_url(path))


@contextlib.asynccontextmanager
async def gateway_harness(tmp_path: Path, llm: ScriptedLLM | None, webhook_secret: str | None = None,
                          **sections: Any) -> AsyncIterator[Harness]:
    async with open_runtime(tmp_path, llm, **sections) as rt:
        bus, counters, health = Bus(), Counters(), Health()
        for name in ("agent", "gateway"):
            health.component(name).set("up")
        clients = Clients(rt.db, rt.config.gateway)
        await clients.load()
        gateway = Gateway(rt.config.gateway, bus, clients, health, counters, LoopMonitor(Notifier({})),
                          lambda: rt.provider.config.model, webhook_secret)
        loop = asyncio.create_task(AgentLoop(bus, rt, rt.config.agent, counters).run(lambda: None))
        server = TestServer(gateway.application(), host="127.0.0.1")
        async with TestClient(server) as client:
            try:
                yield Harness(client, gateway, rt, bus, counters)
            finally:
                loop.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await loop
