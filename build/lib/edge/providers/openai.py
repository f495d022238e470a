"""Any OpenAI-compatible `/v1/chat/completions` server (llama.cpp, vLLM, LM Studio, OpenAI): SSE streaming, tools."""

from __future__ import annotations

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


class OpenAIProvider(HttpProvider):
    kind_label = "the OpenAI-compatible server"
    start_hint = "Is it running? [provider] base_url should end in /v1, e.g. http://127.0.0.1:8080/v1."

    async def _listing(self) -> list[dict[str, Any]]:
        data = await self.request_json("GET", "/models")
        return [m for m in (data.get("data") or []) if isinstance(m, dict)] if isinstance(data, dict) else []

    async def models(self) -> list[str]:
        return [str(m.get("id")) for m in await self._listing()]

    async def embed(self, texts: list[str], model: str) -> list[list[float]]:
        data = await self.request_json("POST", "/embeddings", {"model": model, "input": texts})
        items = sorted(data.get("data") or [], key=lambda item: item.get("index", 0)) if isinstance(data, dict) else []
        if len(items) != len(texts):
            raise ProviderProtocolError(f"{self.label} answered /embeddings without {len(texts)} embeddings")
        return [item["embedding"] for item in items]

    async def info(self) -> ModelInfo:
        if self._info is None:
            listed = {m.get("id"): m for m in await self._listing()}
            entry = listed.get(self.config.model) or (next(iter(listed.values())) if len(listed) == 1 else {})
            meta = entry.get("meta") or {}  # llama.cpp's server reports its context and size here
            context = meta.get("n_ctx") or meta.get("n_ctx_train") or entry.get("max_model_len") or entry.get("context_length")
            params = meta.get("n_params")
            self._info = ModelInfo(
                model=self.config.model,
                native_tools=True,  # a server that rejects tools answers 400; the loop then parses text instead
                context_length=int(context) if isinstance(context, int) else None,
                parameters_b=params / 1e9 if isinstance(params, int) else parameters_from_name(self.config.model),
            )
        return self._info

    def chat(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], *, num_ctx: int) -> AsyncIterator[Event]:
        body: dict[str, Any] = {
            "model": self.config.model,
            "messages": [_to_openai(m) for m in messages],
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = tools
            body["tool_choice"] = "auto"
        return with_retries(self, lambda: self._stream(body), self.config.max_retries)

    async def _stream(self, body: dict[str, Any]) -> AsyncIterator[Event]:
        partial: dict[int, dict[str, str]] = {}  # tool calls arrive in pieces, keyed by index
        finish = ""
        usage: dict[str, Any] = {}
        async for line in self.lines("/chat/completions", body):
            if not line.startswith(b"data:"):
                continue  # SSE comments and event names
            payload = line[5:].strip()
            if payload == b"[DONE]":
                break
            try:
                chunk = orjson.loads(payload)
            except orjson.JSONDecodeError:
                raise ProviderProtocolError(f"{self.label} sent an event that is not JSON: {payload[:80]!r}") from None
            if chunk.get("error"):
                raise ProviderError(f"{self.label} reported an error mid-answer: {chunk['error']}")
            usage = chunk.get("usage") or usage
            for choice in chunk.get("choices") or []:
                delta = choice.get("delta") or {}
                if delta.get("reasoning_content"):
                    yield ThinkingDelta(delta["reasoning_content"])
                if delta.get("content"):
                    yield TextDelta(delta["content"])
                for piece in delta.get("tool_calls") or []:
                    slot = partial.setdefault(piece.get("index", len(partial)), {"id": "", "name": "", "arguments": ""})
                    function = piece.get("function") or {}
                    slot["id"] = piece.get("id") or slot["id"]
                    name = function.get("name") or ""
                    if name != slot["name"]:  # llama.cpp repeats the whole name in every chunk; OpenAI sends it once
                        slot["name"] += name
                    slot["arguments"] += function.get("arguments") or ""
                finish = choice.get("finish_reason") or finish
        else:
            if not finish:
                raise ProviderUnavailable(f"{self.label} closed the connection before the answer was complete")
        if partial:
            yield ToolCalls([
                ToolCall(slot["id"] or f"call_{index}", slot["name"], _arguments(slot["arguments"]))
                for index, slot in sorted(partial.items())
            ])
        yield Done(finish, usage.get("prompt_tokens"), usage.get("completion_tokens"))


def _to_openai(message: dict[str, Any]) -> dict[str, Any]:
    role = message["role"]
    if role == "tool":
        return {"role": "tool", "tool_call_id": message.get("tool_call_id", ""), "content": message["content"]}
    result: dict[str, Any] = {"role": role, "content": message.get("content") or ""}
    if message.get("tool_calls"):
        result["tool_calls"] = [
            {"id": c["id"], "type": "function",
             "function": {"name": c["name"], "arguments": orjson.dumps(c["arguments"]).decode()}}
            for c in message["tool_calls"]
        ]
    return result


def _arguments(text: str) -> Any:
    if not text.strip():
        return {}
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return text  # validation tells the model its arguments were not valid JSON
