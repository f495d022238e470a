"""Headless Chromium driven over the DevTools protocol with aiohttp: enough to click through the web chat."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import itertools
import re
import shutil
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-port=0", "--window-size=800,900"]


class Page:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self._ids = itertools.count(1)

    async def call(self, method: str, **params: Any) -> dict[str, Any]:
        message_id = next(self._ids)
        await self.ws.send_json({"id": message_id, "method": method, "params": params})
        while True:
            reply = await asyncio.wait_for(self.ws.receive_json(), 15)
            if reply.get("id") == message_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply["result"]

    async def eval(self, expression: str) -> Any:
        result = await self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    async def wait_for(self, expression: str, within_s: float = 10.0) -> Any:
        """Wait until a condition holds in the page (the browser has no event we can await for it)."""
        deadline = asyncio.get_running_loop().time() + within_s
        while True:
            try:
                if value := await self.eval(expression):
                    return value
            except RuntimeError:  # the page is still loading: the elements are not there yet
                pass
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"not true in time: {expression}\npage: {await self.eval('document.body.innerText')}")
            await asyncio.sleep(0.05)

    async def screenshot(self, path: Path) -> None:
        data = (await self.call("Page.captureScreenshot", format="png"))["data"]
        await asyncio.to_thread(path.write_bytes, base64.b64decode(data))


@contextlib.asynccontextmanager
async def open_page(url: str, profile: Path) -> AsyncIterator[Page]:
    assert CHROMIUM is not None
    process = await asyncio.create_subprocess_exec(CHROMIUM, *FLAGS, f"--user-data-dir={profile}", url,
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        port = None
        while port is None:
            line = (await asyncio.wait_for(process.stderr.readline(), 30)).decode()  # type: ignore[union-attr]
            if not line:
                raise RuntimeError("chromium exited before it listened")
            if match := re.search(r"DevTools listening on ws://127\.0\.0\.1:(\d+)/", line):
                port = int(match.group(1))
        async with aiohttp.ClientSession() as session:
            targets = await (await session.get(f"http://127.0.0.1:{port}/json/list")).json()
            target = next(t for t in targets if t["type"] == "page")
            async with session.ws_connect(target["webSocketDebuggerUrl"], max_msg_size=0) as ws:
                yield Page(ws)
    finally:
        process.kill()
        await process.wait()
