"""The Telegram Bot API over aiohttp: one method call, errors translated once (never showing the token)."""

from __future__ import annotations

from typing import Any

import aiohttp
import orjson

from edge.errors import EdgeError


class TelegramError(EdgeError):
    def __init__(self, status: int, description: str, retry_after: float | None = None) -> None:
        super().__init__(f"Telegram said {status}: {description}" if status else f"Telegram unreachable: {description}")
        self.status, self.description, self.retry_after = status, description, retry_after

    @property
    def unauthorized(self) -> bool:
        return self.status == 401


class BotApi:
    def __init__(self, api_base: str, token: str, poll_timeout_s: int) -> None:
        self._base = f"{api_base.rstrip('/')}/bot{token}/"
        self._timeout = aiohttp.ClientTimeout(total=poll_timeout_s + 15, sock_connect=10)
        self._session: aiohttp.ClientSession | None = None

    async def call(self, method: str, **params: Any) -> Any:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self._timeout)
        try:
            async with self._session.post(self._base + method, data=orjson.dumps(params),
                                          headers={"Content-Type": "application/json"}) as response:
                body = await response.json(loads=orjson.loads, content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            # aiohttp's messages can carry the URL, and the URL carries the token: say only what kind of failure.
            raise TelegramError(0, type(exc).__name__) from None
        if not isinstance(body, dict) or not body.get("ok"):
            body = body if isinstance(body, dict) else {}
            retry = (body.get("parameters") or {}).get("retry_after")
            raise TelegramError(int(body.get("error_code") or response.status), str(body.get("description", "")), retry)
        return body.get("result")

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()
