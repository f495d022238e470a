"""Machine-facing routes: POST /webhook, GET /api/events (SSE), and the OpenAI-compatible /v1 API.

/v1/chat/completions lets Home Assistant or any OpenAI client use edge as if it were a model: the last
user message becomes a turn, with edge's own tools and memory behind it.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

import apsw
import orjson
from aiohttp import web

from edge.bus import BusFull, InboundMessage, OutboundMessage
from edge.gateway.server import json_body, read_json_object

if TYPE_CHECKING:
    from edge.gateway.server import Gateway

WEBHOOK_MAX_BYTES = 64 * 1024
IDEMPOTENCY_TTL_S = 24 * 3600
_SESSION_NAME = re.compile(r"[A-Za-z0-9_.:@-]{1,64}")


def add_routes(app: web.Application, gateway: Gateway) -> None:
    routes = _Routes(gateway)
    app.add_routes([
        web.post("/webhook", routes.webhook), web.get("/api/events", routes.events),
        web.post("/v1/chat/completions", routes.chat_completions), web.get("/v1/models", routes.models),
    ])


class _Routes:
    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self._in_flight: dict[tuple[str, str], asyncio.Future[dict[str, Any]]] = {}

    async def webhook(self, request: web.Request) -> web.Response:
        gateway = self.gateway
        client = gateway.client(request)
        gateway.check_rate(client)
        if (request.content_length or 0) > WEBHOOK_MAX_BYTES:
            raise web.HTTPRequestEntityTooLarge(WEBHOOK_MAX_BYTES, request.content_length or 0,
                                                text=f"the body is over {WEBHOOK_MAX_BYTES // 1024} KB")
        raw = await request.read()
        if len(raw) > WEBHOOK_MAX_BYTES:
            raise web.HTTPRequestEntityTooLarge(WEBHOOK_MAX_BYTES, len(raw), text=f"the body is over {WEBHOOK_MAX_BYTES // 1024} KB")
        if gateway.webhook_secret is not None:
            expected = "sha256=" + hmac.new(gateway.webhook_secret.encode(), raw, hashlib.sha256).hexdigest()
            if not hmac.compare_digest(expected, request.headers.get("X-Edge-Signature", "")):
                raise web.HTTPUnauthorized(text="missing or wrong X-Edge-Signature (sha256=HMAC of the raw body)")
        try:
            data = read_json_object(orjson.loads(raw))
        except orjson.JSONDecodeError as exc:
            raise web.HTTPBadRequest(text=f"malformed JSON: {exc}") from None
        message, session = data.get("message"), data.get("session", "default")
        if not isinstance(message, str) or not message.strip():
            raise web.HTTPBadRequest(text='"message" must be a non-empty string')
        if not isinstance(session, str) or not _SESSION_NAME.fullmatch(session):
            raise web.HTTPBadRequest(text='"session" must be 1-64 letters, digits or _.:@-')
        key = request.headers.get("X-Idempotency-Key", "")[:128]
        inbound = InboundMessage("webhook", client, f"webhook:{client}:{session}", message)
        if not key:
            return web.json_response(await self._webhook_answer(inbound))
        replayed, body = await self._once(client, key, lambda: self._webhook_answer(inbound))
        return web.json_response(body, headers={"Idempotent-Replayed": "true"} if replayed else None)

    async def _webhook_answer(self, inbound: InboundMessage) -> dict[str, Any]:
        reply = await self._answer("webhook", inbound)
        body = {"response": reply.text, "model": reply.data.get("model", self.gateway.model())}
        if reply.data.get("error"):
            body["error"] = reply.data["error"]
        return body

    async def _answer(self, channel: str, inbound: InboundMessage) -> OutboundMessage:
        try:
            reply = await self.gateway.channels[channel].answer(inbound)
        except BusFull as exc:
            raise web.HTTPServiceUnavailable(text=str(exc), headers={"Retry-After": "5"}) from None
        assert reply is not None
        return reply

    async def _once(self, client: str, key: str, produce) -> tuple[bool, dict[str, Any]]:  # type: ignore[no-untyped-def]
        """Idempotency: the first response for (client, key) is stored and returned again, even while the
        first request is still running, and across restarts."""
        db = self.gateway.clients.db
        stored = await db.call(lambda con: con.execute(
            "SELECT response FROM idempotency WHERE client = ? AND key = ? AND created_at > ?",
            (client, key, time.time() - IDEMPOTENCY_TTL_S)).fetchone())
        if stored:
            return True, orjson.loads(stored[0])
        running = self._in_flight.get((client, key))
        if running is not None:  # the first request with this key is still running: share its answer
            await asyncio.wait({running})
            if running.cancelled():
                raise web.HTTPConflict(text="the first request with this key failed; send it again")
            return True, running.result()
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._in_flight[(client, key)] = future
        try:
            try:
                body = await produce()
            except BaseException:
                future.cancel()
                raise
            future.set_result(body)

            def save(con: apsw.Connection) -> None:
                con.execute("DELETE FROM idempotency WHERE created_at <= ?", (time.time() - IDEMPOTENCY_TTL_S,))
                con.execute("INSERT OR REPLACE INTO idempotency (client, key, response, created_at) VALUES (?,?,?,?)",
                            (client, key, orjson.dumps(body), time.time()))

            await db.call(save)
            return False, body
        finally:
            self._in_flight.pop((client, key), None)

    async def events(self, request: web.Request) -> web.StreamResponse:
        self.gateway.client(request)
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        await response.prepare(request)
        queue = self.gateway.bus.activity.subscribe()
        try:
            await response.write(b": edge activity\n\n")
            while True:
                try:
                    event = await asyncio.wait_for(queue.get(), 15)
                except TimeoutError:
                    await response.write(b": keep-alive\n\n")  # also finds out when the client has gone
                    continue
                await response.write(b"event: " + event["type"].encode() + b"\ndata: " + orjson.dumps(event) + b"\n\n")
        except ConnectionResetError:
            return response
        finally:
            self.gateway.bus.activity.unsubscribe(queue)

    async def models(self, request: web.Request) -> web.Response:
        self.gateway.client(request)
        return web.json_response({"object": "list", "data": [
            {"id": "edge", "object": "model", "created": int(self.gateway.started_at), "owned_by": "edge"}]})

    async def chat_completions(self, request: web.Request) -> web.StreamResponse:
        gateway = self.gateway
        client = gateway.client(request)
        gateway.check_rate(client)
        body = await json_body(request)
        text, conversation = _last_user_text(body.get("messages"))
        user = body.get("user") if isinstance(body.get("user"), str) and body.get("user") else conversation
        inbound = InboundMessage("openai", client, f"openai:{client}:{user[:64]}", text)
        completion_id = f"chatcmpl-{uuid.uuid4().hex[:24]}"
        if not body.get("stream"):
            reply = await self._answer("openai", inbound)
            return web.json_response({
                "id": completion_id, "object": "chat.completion", "created": int(time.time()), "model": "edge",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": reply.text}, "finish_reason": "stop"}],
                "usage": _usage(reply),
            })
        return await self._stream_completion(request, inbound, completion_id, body)

    async def _stream_completion(self, request: web.Request, inbound: InboundMessage, completion_id: str,
                                 body: dict[str, Any]) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"})
        created = int(time.time())

        def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            data = {"id": completion_id, "object": "chat.completion.chunk", "created": created, "model": "edge",
                    "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return b"data: " + orjson.dumps(data) + b"\n\n"

        try:
            replies = self.gateway.channels["openai"].exchange(inbound)
            first = await anext(replies)  # a full queue must become a 503 before any byte is sent
        except BusFull as exc:
            raise web.HTTPServiceUnavailable(text=str(exc), headers={"Retry-After": "5"}) from None
        await response.prepare(request)
        await response.write(chunk({"role": "assistant", "content": ""}))
        reply = first
        while True:
            if reply.kind == "delta":
                await response.write(chunk({"content": reply.text}))
            elif reply.kind == "final":
                break
            reply = await anext(replies)
        await response.write(chunk({}, "stop"))
        if (body.get("stream_options") or {}).get("include_usage"):
            await response.write(b"data: " + orjson.dumps({"id": completion_id, "object": "chat.completion.chunk",
                                                           "created": created, "model": "edge", "choices": [],
                                                           "usage": _usage(reply)}) + b"\n\n")
        await response.write(b"data: [DONE]\n\n")
        await response.write_eof()
        return response


def _last_user_text(messages: Any) -> tuple[str, str]:
    """(the last user message as text, a stable id of the conversation: a hash of its first user message)."""
    if not isinstance(messages, list) or not messages:
        raise web.HTTPBadRequest(text='"messages" must be a non-empty list')
    users = [m for m in messages if isinstance(m, dict) and m.get("role") == "user"]
    if not users:
        raise web.HTTPBadRequest(text='"messages" has no message with role "user"')
    texts = [_content_text(m.get("content")) for m in (users[0], users[-1])]
    if not texts[1].strip():
        raise web.HTTPBadRequest(text="the last user message has no text")
    return texts[1], hashlib.sha256(texts[0].encode()).hexdigest()[:16]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # [{"type": "text", "text": ...}, {"type": "image_url", ...}]
        return "\n".join(p["text"] for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _usage(reply: OutboundMessage) -> dict[str, int]:
    prompt, completion = reply.data.get("prompt_tokens", 0), reply.data.get("completion_tokens", 0)
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}
