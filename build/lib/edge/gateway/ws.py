"""GET /ws/chat: the web chat's socket. Authenticate first, then send messages and answer approvals.

Client → server: {"type": "auth", "token": ...} first, then {"type": "message", "text": ...} and
{"type": "approve", "id": ..., "answer": "yes" | "no" | "always"}.
Server → client: {"type": "ready"}, then per message "delta", "tool", "notice", "approval" and "final"
frames, and {"type": "error", "error": ...} for anything it could not take.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Any

import orjson
from aiohttp import WSMsgType, web

from edge.bus import BusFull, InboundMessage

if TYPE_CHECKING:
    from edge.gateway.server import Gateway

AUTH_TIMEOUT_S = 10.0
MAX_FRAME_BYTES = 64 * 1024
CLOSE_UNAUTHORIZED = 4401


def add_routes(app: web.Application, gateway: Gateway) -> None:
    async def chat_socket(request: web.Request) -> web.WebSocketResponse:
        return await _ChatSocket(gateway).serve(request)

    app.router.add_get("/ws/chat", chat_socket)


class _ChatSocket:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.ws = web.WebSocketResponse(heartbeat=30, max_msg_size=MAX_FRAME_BYTES)
        self.relays: set[asyncio.Task[None]] = set()

    async def serve(self, request: web.Request) -> web.WebSocketResponse:
        await self.ws.prepare(request)
        client = await self._authenticate()
        if client is None:
            await self.ws.close(code=CLOSE_UNAUTHORIZED, message=b"unauthorized")
            return self.ws
        await self._send({"type": "ready", "client": client})
        try:
            async for frame in self.ws:
                if frame.type == WSMsgType.TEXT:
                    await self._handle(client, frame.data)
                elif frame.type == WSMsgType.BINARY:
                    await self._error("send JSON text frames")
        finally:
            for relay in self.relays:  # the turns go on and are saved; only their replies stop here
                relay.cancel()
        return self.ws

    async def _authenticate(self) -> str | None:
        if not self.gateway.config.pairing:
            return "local"
        try:
            frame = await self.ws.receive(timeout=AUTH_TIMEOUT_S)
            data = orjson.loads(frame.data) if frame.type == WSMsgType.TEXT else None
        except (TimeoutError, orjson.JSONDecodeError):
            return None
        if not isinstance(data, dict) or data.get("type") != "auth" or not isinstance(data.get("token"), str):
            return None
        return self.gateway.clients.client_for(data["token"])

    async def _handle(self, client: str, raw: str) -> None:
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError as exc:
            return await self._error(f"malformed JSON: {exc}")
        if not isinstance(data, dict):
            return await self._error("each frame must be a JSON object")
        kind = data.get("type")
        if kind == "message":
            text = data.get("text")
            if not isinstance(text, str) or not text.strip():
                return await self._error('"text" must be a non-empty string')
            if not self.gateway.limiter.allow(client):
                return await self._error("too many messages; wait a little")
            inbound = InboundMessage("web", client, f"web:{client}", text, interactive=True)
            relay = asyncio.create_task(self._relay(inbound))
            self.relays.add(relay)
            relay.add_done_callback(self.relays.discard)
        elif kind == "approve":
            answer, approval_id = data.get("answer"), data.get("id")
            if answer not in ("yes", "no", "always") or not isinstance(approval_id, str):
                return await self._error('"approve" needs "id" and "answer": "yes", "no" or "always"')
            if not self.gateway.bus.answer_approval(approval_id, answer, "web", client):
                return await self._error("no such question waiting for you (it may have timed out)")
        else:
            return await self._error(f'unknown frame type {kind!r}; use "message" or "approve"')
        return None

    async def _relay(self, inbound: InboundMessage) -> None:
        try:
            async for reply in self.gateway.channels["web"].exchange(inbound):
                await self._send({"type": reply.kind, "text": reply.text, "message_id": inbound.id, **reply.data})
        except BusFull as exc:
            await self._error(str(exc))

    async def _send(self, frame: dict[str, Any]) -> None:
        with contextlib.suppress(ConnectionResetError):  # the page was closed mid-answer
            await self.ws.send_str(orjson.dumps(frame).decode())

    async def _error(self, text: str) -> None:
        await self._send({"type": "error", "error": text})
