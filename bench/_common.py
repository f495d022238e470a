"""Shared by the benchmarks: the scripted zero-latency model server, in its own process or thread."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from tests.fakes.llm_server import ScriptedLLM, Step  # noqa: E402

# Answers "hello" plainly; a message mentioning "time" gets one time_now call, then an answer.
RESPONDER = """
from tests.fakes.llm_server import Step
def respond(body):
    messages = body["messages"]
    if messages[-1]["role"] == "tool":
        return Step(text="It is noon.", chunk=64)
    if "time" in messages[-1]["content"] and body.get("tools"):
        return Step(tool_calls=[{"name": "time_now", "arguments": {}}])
    return Step(text="Hello! How can I help?", chunk=64)
"""


def responder():  # the same logic for an in-process server
    namespace: dict = {}
    exec(RESPONDER, namespace)
    return namespace["respond"]


def server_process() -> tuple[subprocess.Popen, int]:
    """The scripted server in a separate process, so its CPU time is not counted as edge's."""
    code = RESPONDER + """
import sys, threading
from tests.fakes.llm_server import ScriptedLLM
llm = ScriptedLLM()
llm.responder = respond
llm.start()
print(llm.port, flush=True)
threading.Event().wait()
"""
    process = subprocess.Popen([sys.executable, "-c", code], cwd=REPO, stdout=subprocess.PIPE, text=True,
                               env={**os.environ, "PYTHONPATH": str(REPO)})
    port = int(process.stdout.readline())
    return process, port


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


__all__ = ["REPO", "ScriptedLLM", "Step", "percentile", "responder", "server_process", "time"]
