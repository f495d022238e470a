"""Ollama's native `/api/chat`: NDJSON streaming, native tool calls, capability probe via `/api/show`."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import orjson

from edge.errors import ProviderError, ProviderProtocolError, ProviderUnavailable
from edge.providers.base import (
    Done,
    Event,
    HttpProvider,
    ModelInfo,
    TextDelta,
    ThinkingDelta,
    ToolCalls,
    parameters_from_name,
    with_retries,
)
from edge.tools.registry import ToolCall


class OllamaProvider(HttpProvider):
    kind_label = "Ollama"
    start_hint = "Start it with `ollama serve` (or `sudo systemctl start ollama`), or set [provider] base_url."

    def missing_model_message(self, model: str, detail: str) -> str:
        return f"Ollama at {self.base_url} does not have the model {model!r}: run `ollama pull {model}`"

    async def models(self) -> list[str]:
        data = await self.request_json("GET", "/api/tags")
        return [str(m.get("name")) for m in (data.get("models") or []) if isinstance(m, dict)]

    async def info(self) -> ModelInfo:
        """Probe `/api/show` once: capabilities, maximum context and size of the model."""
        if self._info is None:
            data = await self.request_json("POST", "/api/show", {"model": self.config.model})
            capabilities = data.get("capabilities")
            model_info = data.get("model_info") or {}
            context = next((v for k, v in model_info.items() if k.endswith(".context_length")), None)
            size = _parameter_size(data, model_info) or parameters_from_name(self.config.model)
            self._info = ModelInfo(
                model=self.config.model,
                # Servers older than the capabilities field: try native tools; a 400 turns them off.
                native_tools=True if capabilities is None else "tools" in capabilities,
                context_length=int(context) if isinstance(context, int) else None,
                parameters_b=size,
                thinking=bool(capabilities and "thinking" in capabilities),
            )
        return self._info

    async def embed(self, texts: list[str], model: str) -> list[list[float]]:
        data = await self.request_json("POST", "/api/embed", {"model": model, "input": texts, "keep_alive": "30m"})
        vectors = data.get("embeddings") if isinstance(data, dict) else None
        if not isinstance(vectors, list) or len(vectors) != len(texts):
            raise ProviderProtocolError(f"Ollama's /api/embed answered without {len(texts)} embeddings")
        return vectors

    async def warm(self) -> None:
        await self.info()
        # An empty chat loads the model and keeps it for keep_alive (notes/ollama.md).
        await self.request_json("POST", "/api/chat", {"model": self.config.model, "messages": [], "stream": False,
                                                      "keep_alive": _keep_alive(self.config.keep_alive)})

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, num_ctx: int) -> AsyncIterator[Event]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [_to_ollama(m) for m in messages],
            "stream": True,
            "options": {"num_ctx": num_ctx},  # always: without it Ollama silently cuts the prompt at its default
            "keep_alive": _keep_alive(self.config.keep_alive),
            "think": self.config.think,
        }
        if tools:
            body["tools"] = tools
        return with_retries(self, lambda: self._stream(body), self.config.max_retries)

    async def _stream(self, body: dict[str, Any]) -> AsyncIterator[Event]:
        calls: list[ToolCall] = []
        async for line in self.lines("/api/chat", body):
            try:
                chunk = orjson.loads(line)
            except orjson.JSONDecodeError:
                raise ProviderProtocolError(f"Ollama sent a line that is not JSON: {line[:80]!r}") from None
            if "error" in chunk:  # an error after HTTP 200 arrives as its own NDJSON line
                raise ProviderError(f"Ollama reported an error mid-answer: {chunk['error']}")
            message = chunk.get("message") or {}
            if message.get("thinking"):
                yield ThinkingDelta(message["thinking"])
            if message.get("content"):
                yield TextDelta(message["content"])
            for raw in message.get("tool_calls") or []:
                function = raw.get("function") or {}
                calls.append(ToolCall(f"call_{len(calls)}", str(function.get("name", "")), _arguments(function.get("arguments"))))
            if chunk.get("done"):
                if calls:
                    yield ToolCalls(calls)
                yield Done(chunk.get("done_reason") or "", chunk.get("prompt_eval_count"), chunk.get("eval_count"))
                return
        raise ProviderUnavailable(f"{self.label} closed the connection before the answer was complete")


def _to_ollama(message: dict[str, Any]) -> dict[str, Any]:
    role = message["role"]
    if role == "tool":
        return {"role": "tool", "tool_name": message.get("name", ""), "content": message["content"]}
    result: dict[str, Any] = {"role": role, "content": message.get("content") or ""}
    if message.get("tool_calls"):
        result["tool_calls"] = [{"function": {"name": c["name"], "arguments": c["arguments"]}} for c in message["tool_calls"]]
    return result


def _arguments(raw: Any) -> Any:
    if isinstance(raw, str):  # some models put a JSON string where an object belongs
        try:
            return orjson.loads(raw)
        except orjson.JSONDecodeError:
            return raw
    return raw if raw is not None else {}


def _keep_alive(value: str) -> int | str:
    # Ollama parses strings as Go durations ("5m"); a bare number must be sent as a number (-1 = forever).
    return int(value) if re.fullmatch(r"-?\d+", value.strip()) else value


def _parameter_size(data: dict[str, Any], model_info: dict[str, Any]) -> float | None:
    count = model_info.get("general.parameter_count")
    if isinstance(count, int) and count > 0:
        return count / 1e9
    size = (data.get("details") or {}).get("parameter_size", "")
    return parameters_from_name(size) if size else None
