"""Framework overhead per turn: what edge adds around the model (prompt, tools, policy, audit, SQLite writes).

The scripted model answers at zero latency from another process. Overhead = turn time minus the bare
HTTP exchanges the turn needed (measured alone, same bodies): what is left is edge's own work.
Usage: python bench/turn_overhead.py [turns]   (targets: p50 ≤ 5 ms plain, ≤ 10 ms with one tool)
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
import uvloop
from _common import percentile, server_process

from edge import config as config_module
from edge.app import runtime


async def discard(event) -> None:
    pass


async def bare_exchange(session: aiohttp.ClientSession, url: str, body: dict) -> float:
    started = time.perf_counter()
    async with session.post(url, json=body) as response:
        async for _ in response.content:
            pass
    return time.perf_counter() - started


async def measure(port: int, turns: int) -> None:
    with tempfile.TemporaryDirectory() as state:
        data = {"provider": {"base_url": f"http://127.0.0.1:{port}", "model": "test-model"},
                "paths": {"state_dir": state}, "security": {"autonomy": "full"}}
        config = config_module.build(config_module.Config, data, "bench")
        async with runtime(config) as rt, aiohttp.ClientSession() as http:
            url = f"http://127.0.0.1:{port}/api/chat"
            body = {"model": "test-model", "messages": [{"role": "user", "content": "hello"}], "stream": True}
            for label, text, requests in (("plain answer", "hello", 1), ("one tool call", "what time is it?", 2)):
                totals, overheads = [], []
                for index in range(turns + 20):
                    session = await rt.store.new_session(f"bench{index % 5}")  # short histories, like real chats
                    started = time.perf_counter()
                    result = await rt.agent.turn(session, text, discard)
                    total = time.perf_counter() - started
                    assert result.requests == requests, result
                    http_time = sum([await bare_exchange(http, url, body) for _ in range(requests)])
                    if index >= 20:  # warm-up: caches, first connections
                        totals.append(total * 1000)
                        overheads.append(max(0.0, total - http_time) * 1000)
                print(f"{label:<14} turn p50 {statistics.median(totals):5.2f} ms  p99 {percentile(totals, 0.99):5.2f} ms   "
                      f"overhead p50 {statistics.median(overheads):5.2f} ms  p99 {percentile(overheads, 0.99):5.2f} ms")


def main(turns: int = 300) -> None:
    server, port = server_process()
    try:
        print(f"per-turn cost over {turns} turns (zero-latency scripted model, uvloop)")
        with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
            runner.run(measure(port, turns))
    finally:
        server.terminate()


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
