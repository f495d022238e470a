"""The size of what edge sends the model for "hello": bytes and tool count, normal and small-model mode.

Usage: python bench/prompt_size.py       (target: small-model mode ≤ 6 KB; nanobot sends 33 KB with 23 tools)
"""

from __future__ import annotations

import asyncio
import tempfile

import orjson
from _common import ScriptedLLM

from edge import config as config_module
from edge.app import runtime
from tests.fakes.llm_server import FakeModel


async def discard(event) -> None:
    pass


async def measure() -> None:
    with ScriptedLLM() as llm, tempfile.TemporaryDirectory() as state:
        llm.add_model(FakeModel("qwen2.5:7b", parameters=7_600_000_000))
        llm.add_model(FakeModel("qwen2.5:1.5b", parameters=1_500_000_000))
        print('request body for "hello" (first turn, default workspace)')
        for label, model in (("normal mode (7B model)", "qwen2.5:7b"), ("small-model mode (1.5B)", "qwen2.5:1.5b")):
            data = {"provider": {"base_url": llm.ollama_url, "model": model}, "paths": {"state_dir": f"{state}/{model}"}}
            async with runtime(config_module.build(config_module.Config, data, "bench")) as rt:
                await rt.agent.turn(await rt.store.current_session("bench"), "hello", discard)
            body = llm.chats()[-1]
            size = len(orjson.dumps(body))
            system = len(body["messages"][0]["content"].encode())
            tools = len(orjson.dumps(body.get("tools", [])))
            print(f"  {label:<24} {size:6d} bytes  ({len(body.get('tools', []))} tools: {tools} bytes; "
                  f"system prompt: {system} bytes)")


if __name__ == "__main__":
    asyncio.run(measure())
