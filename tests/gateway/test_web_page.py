"""The web chat in real headless Chromium: pair, stream an answer, approve a tool call with the button."""

from __future__ import annotations

import pytest

from edge.gateway.auth import new_pairing_code
from tests.browser import CHROMIUM, open_page
from tests.fakes.llm_server import ScriptedLLM, Step
from tests.gateway.harness import gateway_harness

pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")


async def test_pair_chat_and_approve_in_a_browser(tmp_path, llm: ScriptedLLM):
    write = {"name": "file_write", "arguments": {"path": "todo.md", "content": "water the plants"}}
    llm.script(Step(text="Hello from edge, streaming.", chunk=3, delay=0.01), Step(tool_calls=[write]), "Saved it.")
    async with gateway_harness(tmp_path, llm) as h:
        async with open_page(h.url("/"), tmp_path / "profile") as page:
            await page.wait_for("!document.getElementById('pair').hidden")  # unpaired: the page asks for a code
            code = await new_pairing_code(h.runtime.db, 600)
            await page.eval(f"document.getElementById('code').value = '{code}';"
                            "document.querySelector('#pair button').click()")
            await page.wait_for("document.getElementById('status').textContent === 'connected'")
            await page.eval("document.getElementById('text').value = 'hi';"
                            "document.querySelector('#chat button').click()")
            await page.wait_for("[...document.querySelectorAll('.bot')].some(b => b.textContent === 'Hello from edge, streaming.')")
            await page.eval("document.getElementById('text').value = 'note that down';"
                            "document.querySelector('#chat button').click()")
            await page.wait_for("document.querySelectorAll('.approval button').length === 3")
            assert "file_write" in await page.eval("document.querySelector('.approval').textContent")
            await page.eval("[...document.querySelectorAll('.approval button')].find(b => b.textContent === 'Approve').click()")
            await page.wait_for("[...document.querySelectorAll('.bot')].some(b => b.textContent === 'Saved it.')")
            await page.screenshot(tmp_path / "web-chat.png")
            token_kept = await page.eval("localStorage.getItem('edge-token') !== null")
        written = (h.runtime.config.workspace / "todo.md").read_text()
    assert written == "water the plants" and token_kept
    assert (tmp_path / "web-chat.png").stat().st_size > 1000
