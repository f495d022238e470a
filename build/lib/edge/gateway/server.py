"""The gateway service: an aiohttp app embedded with AppRunner, its middleware, and the small routes.

Nothing a client sends can crash the daemon or see a traceback: every error leaves as JSON with a reason
(400 malformed, 401 no token, 404 unknown route, 413 too large, 429 too fast, 500 with no details).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from edge import __version__
from edge.bus import Bus
from edge.channels.base import ReplyStreams
from edge.config import GatewayConfig
from edge.gateway.auth import Clients, PairingRefused
from edge.metrics import Counters, render, resident_bytes
from edge.platform.systemd import LoopMonitor
from edge.ratelimit import RateLimiter
from edge.supervise import Health

log = logging.getLogger(__name__)
MAX_BODY_BYTES = 1024 * 1024  # any route; /webhook allows 64 KB
LOOPBACK = ("127.0.0.1", "::1", "localhost")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass
class Gateway:
    config: GatewayConfig
    bus: Bus
    clients: Clients
    health: Health
    counters: Counters
    monitor: LoopMonitor
    model: Callable[[], str]  # the model name now in use, for replies and /v1/models
    webhook_secret: str | None = None
    started_at: float = 0.0

    def __post_init__(self) -> None:
        self.limiter = RateLimiter(self.config.requests_per_minute)
        self.channels = {name: ReplyStreams(name, self.bus) for name in ("web", "webhook", "openai")}
        self.port = 0  # the port really bound (the config may say 0 in tests)

    def application(self) -> web.Application:
        from edge.gateway import api, page, ws  # the route modules, registered here and only here

        app = web.Application(client_max_size=MAX_BODY_BYTES, middlewares=[_errors])
        app.add_routes([
            web.get("/health", self.health_route), web.get("/metrics", self.metrics_route),
            web.post("/pair", self.pair_route), web.get("/", page.serve),
        ])
        api.add_routes(app, self)
        ws.add_routes(app, self)
        return app

    async def run(self, started: Callable[[], None]) -> None:
        if self.config.host not in LOOPBACK:
            log.warning("the gateway listens on %s, reachable from the network; only paired clients get in",
                        self.config.host)
        runner = web.AppRunner(self.application(), access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await runner.setup()
        try:
            site = web.TCPSite(runner, self.config.host, self.config.port)
            await site.start()
            self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
            self.started_at = time.time()
            log.info("gateway listening on http://%s:%d", self.config.host, self.port)
            started()
            await asyncio.Event().wait()  # serve until cancelled
        finally:
            await runner.cleanup()  # stop accepting, close connections

    # --- shared by the route modules ------------------------------------------------------------
    def client(self, request: web.Request) -> str:
        """The paired client a request comes from, or 401. Tokens only in the header, never in URLs."""
        if not self.config.pairing:
            return "local"
        header = request.headers.get("Authorization", "")
        token = header[7:].strip() if header[:7].lower() == "bearer " else ""
        name = self.clients.client_for(token)
        if name is None:
            raise web.HTTPUnauthorized(text="missing or unknown bearer token: pair first with POST /pair")
        return name

    def check_rate(self, key: str) -> None:
        if not self.limiter.allow(key):
            retry = max(1, round(self.limiter.retry_after(key)))
            raise web.HTTPTooManyRequests(text=f"too many requests; retry in {retry} s",
                                          headers={"Retry-After": str(retry)})

    # --- small routes ---------------------------------------------------------------------------
    async def health_route(self, request: web.Request) -> web.Response:
        components = {c.name: {"status": c.status, "restarts": c.restarts} for c in self.health.components.values()}
        healthy = self.health.healthy
        body = {"status": "ok" if healthy else "degraded", "version": __version__,
                "uptime_s": round(time.time() - self.started_at, 1), "components": components}
        return web.json_response(body, status=200 if healthy else 503)

    async def metrics_route(self, request: web.Request) -> web.Response:
        gauges = {"queue_depth": self.bus.inbound.qsize(), "rss_bytes": resident_bytes(),
                  "loop_lag_seconds": round(self.monitor.lag, 4), "uptime_seconds": round(time.time() - self.started_at)}
        restarts = {c.name: c.restarts for c in self.health.components.values()}
        return web.Response(text=render(self.counters, gauges, restarts), content_type="text/plain", charset="utf-8")

    async def pair_route(self, request: web.Request) -> web.Response:
        code = request.headers.get("X-Pairing-Code", "")
        name = request.headers.get("X-Client-Name", "")[:64] or f"client@{request.remote}"
        try:
            token = await self.clients.pair(code, request.remote or "?", name)
        except PairingRefused as exc:
            headers = {"Retry-After": str(max(1, round(exc.retry_after)))} if exc.retry_after else None
            return web.json_response({"error": str(exc)}, status=exc.status, headers=headers)
        log.info("paired a new client: %s", name)
        return web.json_response({"token": token, "client": name})


def read_json_object(data: Any) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise web.HTTPBadRequest(text="the body must be a JSON object")
    return data


async def json_body(request: web.Request) -> dict[str, Any]:
    try:
        return read_json_object(await request.json(loads=orjson.loads))
    except ValueError as exc:
        raise web.HTTPBadRequest(text=f"malformed JSON: {exc}") from None


@web.middleware
async def _errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    try:
        return await handler(request)
    except web.HTTPException as exc:
        if exc.status < 400:
            raise
        message = exc.text if exc.text and not exc.text.startswith(f"{exc.status}:") else exc.reason
        if exc.status == 404:
            message = f"no such route: {request.method} {request.path}"
        elif exc.status == 405:
            message = f"{request.method} is not allowed on {request.path}"
        if request.path.startswith("/v1/"):  # what OpenAI clients parse
            kind = {401: "authentication_error", 429: "rate_limit_error"}.get(exc.status, "invalid_request_error")
            return web.json_response({"error": {"message": message, "type": kind, "code": exc.status}},
                                     status=exc.status, headers=_extra_headers(exc))
        return web.json_response({"error": message}, status=exc.status, headers=_extra_headers(exc))
    except asyncio.CancelledError:
        raise
    except Exception:
        log.exception("gateway error on %s %s", request.method, request.path)
        return web.json_response({"error": "internal error; see the edge log"}, status=500)


def _extra_headers(exc: web.HTTPException) -> dict[str, str]:
    return {k: v for k, v in exc.headers.items() if k in ("Retry-After", "WWW-Authenticate")}
