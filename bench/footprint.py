"""The daemon's footprint: launch → READY=1, idle memory, and /health and /webhook under 50 concurrent clients.

Usage: python bench/footprint.py [--binary build/dist/edge/edge]
Targets on a 2-core dev machine: READY ≤ 0.4 s, idle RSS ≤ 40 MB (plain CPython), webhook overhead p99 ≤ 10 ms.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from _common import percentile, server_process

CLIENTS = 50


def memory(pid: int) -> dict[str, float]:
    """RSS, PSS, USS (private pages) and RssAnon, in MB."""
    rollup: dict[str, int] = {}
    for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]:
        name, value = line.split(":", 1)
        rollup[name] = int(value.split()[0])
    status = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    uss = rollup["Private_Clean"] + rollup["Private_Dirty"]
    return {"RSS": rollup["Rss"] / 1024, "PSS": rollup["Pss"] / 1024, "USS": uss / 1024,
            "RssAnon": int(status["RssAnon"].split()[0]) / 1024}


async def load(url: str, total: int, make_request) -> tuple[float, list[float]]:  # type: ignore[no-untyped-def]
    latencies: list[float] = []
    remaining = iter(range(total))

    async def client(session: aiohttp.ClientSession) -> None:
        for index in remaining:
            started = time.perf_counter()
            async with make_request(session, index) as response:
                await response.read()
                assert response.status == 200, response.status
            latencies.append((time.perf_counter() - started) * 1000)

    async with aiohttp.ClientSession(base_url=url, connector=aiohttp.TCPConnector(limit=CLIENTS)) as session:
        started = time.perf_counter()
        await asyncio.gather(*(client(session) for _ in range(CLIENTS)))
        return total / (time.perf_counter() - started), latencies


async def sequential(url: str, total: int, make_request) -> list[float]:  # type: ignore[no-untyped-def]
    latencies = []
    async with aiohttp.ClientSession(base_url=url) as session:
        for index in range(total):
            started = time.perf_counter()
            async with make_request(session, index) as response:
                await response.read()
            latencies.append((time.perf_counter() - started) * 1000)
    return latencies[20:]  # warm-up


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--binary", help="measure this edge (e.g. the standalone build/dist/edge/edge) "
                        "instead of the one in this Python environment")
    args = parser.parse_args()
    model, model_port = server_process()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as state:
        notify_path = f"{state}/notify"
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(20)
        env = {**os.environ, "NOTIFY_SOCKET": notify_path, "EDGE_PATHS__STATE_DIR": state,
               "EDGE_PROVIDER__BASE_URL": f"http://127.0.0.1:{model_port}", "EDGE_PROVIDER__MODEL": "test-model",
               "EDGE_GATEWAY__PORT": str(port), "EDGE_GATEWAY__REQUESTS_PER_MINUTE": "0",
               "EDGE_AGENT__SENDER_MESSAGES_PER_MINUTE": "0", "EDGE_LOG__LEVEL": "warning"}
        edge = Path(args.binary) if args.binary else Path(sys.executable).with_name("edge")
        started = time.perf_counter()
        daemon = subprocess.Popen([str(edge), "run"], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        try:
            while not notify.recv(4096).startswith(b"READY=1"):
                pass
            ready = time.perf_counter() - started
            code = daemon.stdout.readline().strip()
            time.sleep(10)
            idle = memory(daemon.pid)
            asyncio.run(measure(f"http://127.0.0.1:{port}", code, ready, idle, daemon.pid))
        finally:
            daemon.terminate()
            daemon.wait(10)
            model.terminate()


async def measure(url: str, code: str, ready: float, idle: dict[str, float], pid: int) -> None:
    async with aiohttp.ClientSession() as session:
        token = (await (await session.post(f"{url}/pair", headers={"X-Pairing-Code": code})).json())["token"]
    auth = {"Authorization": f"Bearer {token}"}

    def health(session, index):  # type: ignore[no-untyped-def]
        return session.get("/health")

    def webhook(session, index):  # type: ignore[no-untyped-def]
        return session.post("/webhook", json={"message": "hello", "session": f"s{index % CLIENTS}"}, headers=auth)

    health_rate, health_ms = await load(url, 5000, health)
    hook_rate, hook_ms = await load(url, 1000, webhook)
    single = await sequential(url, 220, webhook)
    print(f"edge run: READY=1 after {ready:.3f} s")
    print("idle after 10 s: " + ", ".join(f"{k} {v:.1f} MB" for k, v in idle.items()))
    print(f"GET /health   {CLIENTS} clients: {health_rate:7.0f} req/s  p50 {statistics.median(health_ms):6.2f} ms  "
          f"p99 {percentile(health_ms, 0.99):6.2f} ms")
    print(f"POST /webhook {CLIENTS} clients: {hook_rate:7.0f} req/s  p50 {statistics.median(hook_ms):6.2f} ms  "
          f"p99 {percentile(hook_ms, 0.99):6.2f} ms  (turns queue for the one model)")
    print(f"POST /webhook 1 client (overhead, zero-latency model): p50 {statistics.median(single):5.2f} ms  "
          f"p99 {percentile(single, 0.99):5.2f} ms")
    print("after the load: " + ", ".join(f"{k} {v:.1f} MB" for k, v in memory(pid).items()))


if __name__ == "__main__":
    main()
