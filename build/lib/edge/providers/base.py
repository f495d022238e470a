"""The provider contract — `chat(messages, tools, num_ctx) -> stream of events` — and what all providers share.

Shared here: HTTP with aiohttp (errors translated into edge's tree once, with a message the user can
act on), retries with backoff for 429/503 and dropped connections, one request at a time to a local
model, and the fallback chain.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import re
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import aiohttp
import orjson

from edge.config import ProviderConfig
from edge.errors import ModelNotFound, ProviderError, ProviderProtocolError, ProviderUnavailable, ToolsUnsupported
from edge.tools.registry import ToolCall

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TextDelta:
    text: str


@dataclass(frozen=True)
class ThinkingDelta:
    text: str


@dataclass(frozen=True)
class ToolCalls:
    calls: list[ToolCall]


@dataclass(frozen=True)
class Done:
    reason: str  # "stop", "length", "tool_calls", ... or "" when the server did not say
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


Event = TextDelta | ThinkingDelta | ToolCalls | Done


@dataclass(frozen=True)
class ModelInfo:
    model: str
    native_tools: bool  # False: tools are described in the prompt and parsed from the text
    context_length: int | None  # the model's maximum, when the server says
    parameters_b: float | None  # size in billions of parameters, when known
    thinking: bool = False


class Provider(Protocol):
    config: ProviderConfig
    label: str  # "Ollama at http://..." — used in messages

    async def info(self) -> ModelInfo: ...

    async def models(self) -> list[str]:
        """The model names the server offers."""

    def use_model(self, model: str) -> None: ...

    async def warm(self) -> None:
        """Load the model now, so that the first real answer does not wait for it."""

    async def embed(self, texts: list[str], model: str) -> list[list[float]]:
        """One vector per text, from an embedding model on the same server."""

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, num_ctx: int) -> AsyncIterator[Event]: ...

    def forget_tools(self) -> None:
        """The model refused tool definitions: from now on it runs without native tools."""

    async def close(self) -> None: ...


def parameters_from_name(model: str) -> float | None:
    """Guess a model's size from its name: "qwen2.5:3b" → 3.0, "SmolLM2-135M" → 0.135."""
    match = re.search(r"(?<![\d.])(\d+(?:\.\d+)?)\s*([bm])(?![a-z])", model.lower())
    if not match:
        return None
    size = float(match.group(1))
    return size if match.group(2) == "b" else size / 1000


class HttpProvider:
    """aiohttp plumbing shared by the Ollama and OpenAI providers."""

    kind_label = "the model server"
    start_hint = "check that it is running and that [provider] base_url points at it"

    def __init__(self, config: ProviderConfig, api_key: str | None = None) -> None:
        self.config = config
        self.base_url = config.base_url.rstrip("/")
        self.label = f"{self.kind_label} at {self.base_url}"
        self._api_key = api_key
        self._session: aiohttp.ClientSession | None = None
        self._info: ModelInfo | None = None
        # One request at a time: two parallel requests to a local model each get their own KV cache.
        self._lock = asyncio.Lock()

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
            timeout = aiohttp.ClientTimeout(total=None, sock_connect=10, sock_read=self.config.timeout_s)
            self._session = aiohttp.ClientSession(headers=headers, timeout=timeout, json_serialize=_dumps)
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    def use_model(self, model: str) -> None:
        self.config = dataclasses.replace(self.config, model=model)
        self._info = None

    async def warm(self) -> None:
        await self.info()  # servers without a preload call: at least the capability probe is done

    def forget_tools(self) -> None:
        if self._info is not None:
            self._info = dataclasses.replace(self._info, native_tools=False)

    async def request_json(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        async with self.open(method, path, body) as response:
            try:
                return await response.json(loads=orjson.loads, content_type=None)
            except (ValueError, aiohttp.ContentTypeError) as exc:
                raise ProviderProtocolError(f"{self.label} answered {path} with something that is not JSON") from exc

    def open(self, method: str, path: str, body: dict[str, Any] | None = None) -> _Request:
        return _Request(self, method, path, body)

    def error_for_status(self, status: int, text: str, headers: Any) -> ProviderError:
        detail = _error_detail(text)
        model = self.config.model
        if status == 404 or ("not found" in detail.lower() and "model" in detail.lower()):
            return ModelNotFound(self.missing_model_message(model, detail))
        if status == 400 and "support" in detail.lower() and "tool" in detail.lower():
            return ToolsUnsupported(f"{model} does not support tools ({detail})")
        if status in (401, 403):
            return ProviderError(
                f"{self.label} refused the request ({status}: {detail}); check the API key named by [provider] api_key_env"
            )
        if status == 429 or status >= 500:
            retry_after = _retry_after(headers)
            return ProviderUnavailable(f"{self.label} is busy or failing ({status}: {detail})", retry_after)
        return ProviderError(f"{self.label} rejected the request ({status}: {detail})")

    def missing_model_message(self, model: str, detail: str) -> str:
        return f"{self.label} does not have the model {model!r} ({detail}); check [provider] model"

    def unreachable(self, exc: BaseException) -> ProviderUnavailable:
        reason = str(exc) or type(exc).__name__
        refused = isinstance(exc, aiohttp.ClientConnectorError) and isinstance(exc.os_error, ConnectionRefusedError)
        if refused:
            reason = "connection refused"
        elif isinstance(exc, aiohttp.ClientConnectorError):
            reason = str(exc.os_error)
        elif isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
            reason = f"no answer within {self.config.timeout_s:g} s"
        return ProviderUnavailable(f"cannot reach {self.label} ({reason}). {self.start_hint}", retryable=not refused)

    async def lines(self, path: str, body: dict[str, Any], separator: bytes = b"\n") -> AsyncIterator[bytes]:
        """POST and yield the response's non-empty lines, as they arrive, holding the model lock."""
        async with self._lock, self.open("POST", path, body) as response:
            try:
                async for raw in response.content:
                    line = raw.strip()
                    if line:
                        yield line
            except (aiohttp.ClientError, TimeoutError) as exc:
                raise ProviderUnavailable(f"{self.label} dropped the connection mid-answer ({exc or type(exc).__name__})") from exc


class _Request:
    """`async with provider.open(...) as response`: a response with a 2xx status, or an edge error."""

    def __init__(self, provider: HttpProvider, method: str, path: str, body: dict[str, Any] | None) -> None:
        self.provider, self.method, self.path, self.body = provider, method, path, body
        self._response: aiohttp.ClientResponse | None = None

    async def __aenter__(self) -> aiohttp.ClientResponse:
        provider = self.provider
        try:
            response = await provider.session().request(self.method, provider.base_url + self.path, json=self.body)
        except (aiohttp.ClientError, TimeoutError, OSError) as exc:
            raise provider.unreachable(exc) from exc
        if response.status >= 400:
            try:
                text = await response.text()
            except (aiohttp.ClientError, TimeoutError):
                text = ""
            response.release()
            raise provider.error_for_status(response.status, text, response.headers)
        self._response = response
        return response

    async def __aexit__(self, *exc: object) -> None:
        if self._response is not None:
            self._response.release()


def _dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def _error_detail(text: str) -> str:
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return text.strip()[:200] or "no details"
    error = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(error, dict):
        error = error.get("message", error)
    return str(error)[:200]


def _retry_after(headers: Any) -> float | None:
    try:
        return min(float(headers.get("Retry-After", "")), 30.0)
    except ValueError:
        return None


async def with_retries(
    provider: Provider, attempt: Callable[[], AsyncIterator[Event]], max_retries: int, base_delay: float = 0.5
) -> AsyncIterator[Event]:
    """Retry a streaming call on 429/503/dropped connections — but only while nothing has been yielded,
    so the user never sees half an answer twice."""
    for number in range(max_retries + 1):
        yielded = False
        try:
            async for event in attempt():
                yielded = True
                yield event
            return
        except ProviderUnavailable as exc:
            if yielded or number == max_retries or not exc.retryable:
                raise
            delay = exc.retry_after if exc.retry_after is not None else base_delay * 2**number
            log.warning("%s; retrying in %.1f s (%d/%d)", exc, delay, number + 1, max_retries)
            await asyncio.sleep(delay)


class FallbackChain:
    """Providers tried in order: the first that is reachable and has the model answers."""

    def __init__(self, providers: list[Provider]) -> None:
        self.providers = providers
        self.active = providers[0]

    @property
    def config(self) -> ProviderConfig:
        return self.active.config

    @property
    def label(self) -> str:
        return self.active.label

    async def info(self) -> ModelInfo:
        return await self._first(lambda p: p.info())

    async def models(self) -> list[str]:
        return await self._first(lambda p: p.models())

    async def warm(self) -> None:
        await self._first(lambda p: p.warm())

    def use_model(self, model: str) -> None:
        self.providers[0].use_model(model)
        self.active = self.providers[0]

    async def _first(self, call: Callable[[Provider], Any]) -> Any:
        errors = []
        for provider in self.providers:
            try:
                result = await call(provider)
            except (ProviderUnavailable, ModelNotFound) as exc:
                errors.append(exc)
                continue
            self.active = provider
            return result
        raise errors[0] if len(errors) == 1 else ProviderUnavailable("; ".join(str(e) for e in errors))

    async def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, num_ctx: int) -> AsyncIterator[Event]:
        errors: list[ProviderError] = []
        for provider in self.providers:
            started = False
            try:
                async for event in provider.chat(messages, tools, num_ctx=num_ctx):
                    started = True
                    self.active = provider
                    yield event
                return
            except (ProviderUnavailable, ModelNotFound) as exc:
                if started:
                    raise
                log.warning("%s; trying the next provider", exc)
                errors.append(exc)
        raise errors[0] if len(errors) == 1 else ProviderUnavailable("every provider failed: " + "; ".join(map(str, errors)))

    def forget_tools(self) -> None:
        self.active.forget_tools()

    async def close(self) -> None:
        for provider in self.providers:
            await provider.close()
