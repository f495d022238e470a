"""A fake Telegram Bot API on 127.0.0.1: long polling, messages, edits, callbacks, and injected faults.

It answers the way Telegram does — `{"ok": false, "error_code", "description", "parameters"}` for errors,
"message is not modified" for an identical edit, "can't parse entities" for broken HTML — and runs in the
test's own event loop, so a test can await what the bot did instead of polling for it.
"""

from __future__ import annotations

import asyncio
import html.parser
import time
from collections import defaultdict, deque
from dataclasses import dataclass
from typing import Any

from aiohttp import web

TOKEN = "123456789:TESTtokenABCDEFGHIJKLMNOPQRSTUVWXYZ012"


@dataclass
class Fault:
    status: int
    description: str
    retry_after: int | None = None


class FakeTelegram:
    def __init__(self) -> None:
        self.updates: list[dict[str, Any]] = []
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.messages: dict[tuple[int, int], str] = {}  # (chat, message id) → current text
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.confirmed_offset = 0
        self._next_update = 1
        self._next_message = 100
        self._changed = asyncio.Condition()
        self._runner: web.AppRunner | None = None
        self.url = ""

    # --- what tests do --------------------------------------------------------------------------
    async def __aenter__(self) -> FakeTelegram:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._handle)
        self._runner = web.AppRunner(app, access_log=None)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._runner.cleanup()  # type: ignore[union-attr]

    async def user_says(self, user_id: int, text: str, username: str = "", chat_id: int | None = None) -> int:
        return await self._add({"message": self._message(user_id, username, chat_id, text=text)})

    async def user_sends_photo(self, user_id: int, username: str = "") -> int:
        return await self._add({"message": self._message(user_id, username, None, photo=[{"file_id": "x", "width": 1}])})

    async def user_presses(self, user_id: int, chat_id: int, message_id: int, data: str) -> int:
        query = {"id": f"cb{self._next_update}", "from": {"id": user_id, "is_bot": False, "first_name": "U"},
                 "message": {"message_id": message_id, "chat": {"id": chat_id, "type": "private"}}, "data": data}
        return await self._add({"callback_query": query})

    def fail(self, method: str, status: int, description: str, retry_after: int | None = None, times: int = 1) -> None:
        self.faults[method].extend(Fault(status, description, retry_after) for _ in range(times))

    def sent(self, method: str, chat_id: int | None = None) -> list[dict[str, Any]]:
        return [p for m, p in self.calls if m == method and (chat_id is None or int(p.get("chat_id", 0)) == chat_id)]

    def texts_to(self, chat_id: int) -> list[str]:
        """What the chat shows now: each message the bot sent, in its latest (edited) form."""
        return [text for (chat, _), text in sorted(self.messages.items()) if chat == chat_id]

    async def wait_for(self, predicate, within_s: float = 10.0) -> Any:  # type: ignore[no-untyped-def]
        async def until() -> Any:
            async with self._changed:
                while not (result := predicate()):
                    await self._changed.wait()
                return result

        return await asyncio.wait_for(until(), within_s)

    # --- the API --------------------------------------------------------------------------------
    def _message(self, user_id: int, username: str, chat_id: int | None, **content: Any) -> dict[str, Any]:
        sender = {"id": user_id, "is_bot": False, "first_name": "User", **({"username": username} if username else {})}
        chat = {"id": chat_id or user_id, "type": "private" if not chat_id else "group"}
        self._next_message += 1
        return {"message_id": self._next_message, "from": sender, "chat": chat, "date": int(time.time()), **content}

    async def _add(self, update: dict[str, Any]) -> int:
        update_id = self._next_update
        self._next_update += 1
        self.updates.append({"update_id": update_id, **update})
        await self._notify()
        return update_id

    async def _notify(self) -> None:
        async with self._changed:
            self._changed.notify_all()

    async def _handle(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        params = dict(await request.json()) if request.can_read_body else {}
        if request.match_info["token"] != TOKEN:
            return _error(401, "Unauthorized")
        if self.faults[method]:
            fault = self.faults[method].popleft()
            self.calls.append((method + ":failed", params))
            await self._notify()
            return _error(fault.status, fault.description, fault.retry_after)
        if method == "getUpdates":
            return await self._get_updates(params)
        self.calls.append((method, params))
        try:
            result = self._answer(method, params)
        except _ApiError as exc:
            return _error(400, exc.description)
        finally:
            await self._notify()
        return web.json_response({"ok": True, "result": result})

    async def _get_updates(self, params: dict[str, Any]) -> web.Response:
        offset = int(params.get("offset", 0))
        self.confirmed_offset = max(self.confirmed_offset, offset)
        self.calls.append(("getUpdates", params))
        await self._notify()

        def pending() -> list[dict[str, Any]]:
            return [u for u in self.updates if u["update_id"] >= offset]

        try:
            result = await self.wait_for(pending, within_s=float(params.get("timeout", 0)) or 0.01)
        except TimeoutError:
            result = []
        return web.json_response({"ok": True, "result": result[:100]})

    def _answer(self, method: str, params: dict[str, Any]) -> Any:
        if method == "getMe":
            return {"id": 123456789, "is_bot": True, "first_name": "edge", "username": "edge_test_bot"}
        if method == "sendMessage":
            text = self._checked_text(params)
            self._next_message += 1
            chat = int(params["chat_id"])
            self.messages[(chat, self._next_message)] = text
            return {"message_id": self._next_message, "chat": {"id": chat}, "date": int(time.time()), "text": text}
        if method == "editMessageText":
            key = (int(params["chat_id"]), int(params["message_id"]))
            if key not in self.messages:
                raise _ApiError("Bad Request: message to edit not found")
            text = self._checked_text(params)
            if self.messages[key] == text and "reply_markup" not in params:
                raise _ApiError("Bad Request: message is not modified: specified new message content and reply "
                                "markup are exactly the same as a current content and reply markup of the message")
            self.messages[key] = text
            return {"message_id": key[1], "chat": {"id": key[0]}, "text": text}
        if method in ("sendChatAction", "answerCallbackQuery", "editMessageReplyMarkup"):
            return True
        raise _ApiError(f"Not Found: method {method} not found")

    def _checked_text(self, params: dict[str, Any]) -> str:
        text = str(params.get("text", ""))
        if not text.strip():
            raise _ApiError("Bad Request: message text is empty")
        if len(text) > 4096:
            raise _ApiError("Bad Request: message is too long")
        if params.get("parse_mode") == "HTML":
            _check_html(text)
            return _strip_tags(text)
        return text


class _ApiError(Exception):
    def __init__(self, description: str) -> None:
        self.description = description


def _error(status: int, description: str, retry_after: int | None = None) -> web.Response:
    body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
    if retry_after is not None:
        body["parameters"] = {"retry_after": retry_after}
    return web.json_response(body, status=status)


_ALLOWED_TAGS = {"b", "strong", "i", "em", "u", "s", "code", "pre", "a", "blockquote", "tg-spoiler"}


class _TagChecker(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[str] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _ALLOWED_TAGS:
            raise _ApiError(f"Bad Request: can't parse entities: Unsupported start tag \"{tag}\"")
        self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack.pop() != tag:
            raise _ApiError(f"Bad Request: can't parse entities: Unexpected end tag \"{tag}\"")

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _check_html(text: str) -> None:
    checker = _TagChecker()
    checker.feed(text)
    checker.close()
    if checker.stack:
        raise _ApiError(f"Bad Request: can't parse entities: Can't find end tag corresponding to start tag \"{checker.stack[-1]}\"")


def _strip_tags(text: str) -> str:
    checker = _TagChecker()
    checker.feed(text)
    return "".join(checker.text)
