"""A scripted model server on 127.0.0.1 speaking the real Ollama (NDJSON) and OpenAI (SSE) wire formats.

Tests queue `Step`s — text, native tool calls, thinking, HTTP errors, mid-stream errors, dropped
connections, truncated prompts — and read back every request body the server received. It runs on its
own thread and event loop, so in-process tests and `edge` subprocesses can both talk to it.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
import zlib
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Step:
    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)  # [{"name": ..., "arguments": {...} or "json"}]
    thinking: str = ""
    done_reason: str = "stop"
    status: int = 200  # an HTTP error instead of an answer
    error: str = ""  # the error text, for status >= 400 or mid-stream
    midstream_error: bool = False  # send `error` as a stream line after HTTP 200 and some text
    drop: bool = False  # close the connection after the text, without a final chunk
    retry_after: float | None = None
    delay: float = 0.0  # seconds before each chunk
    chunk: int = 6  # characters per streamed chunk
    prompt_eval_count: int | None = None  # default: the prompt's real size, ~4 characters a token
    llama_cpp_style: bool = False  # repeat the id and name in every tool-call chunk, as llama.cpp's server does


@dataclass
class FakeModel:
    name: str
    tools: bool = True
    thinking: bool = False
    context_length: int = 32768
    parameters: int = 7_000_000_000
    reads_at_most: int | None = None  # like a server that ignores num_ctx and cuts the prompt here
    dims: int = 0  # > 0: an embedding model making vectors of this size


def embedding(text: str, dims: int) -> list[float]:
    """Deterministic bag-of-words vector: texts that share words are close, as with a real model."""
    vector = [0.0] * dims
    for word in re.findall(r"[a-z0-9]+", text.lower()):
        word = word[:-1] if word.endswith("s") and len(word) > 3 else word  # plants ~ plant
        vector[zlib.crc32(word.encode()) % dims] += 1.0
        vector[zlib.crc32(word.encode() + b"#") % dims] += 0.5
    return vector if any(vector) else [1.0] + [0.0] * (dims - 1)


class ScriptedLLM:
    def __init__(self) -> None:
        self.steps: deque[Step] = deque()
        self.responder: Callable[[dict[str, Any]], Step] | None = None
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.models: dict[str, FakeModel] = {}
        self.in_flight = 0
        self.max_in_flight = 0
        self.chunks_sent = 0
        self.port = 0
        self._loop: asyncio.AbstractEventLoop | None = None
        self._runner: web.AppRunner | None = None
        self._thread: threading.Thread | None = None
        self.embed_calls = 0  # texts embedded, to see the cache work
        self.embeddings_down = False  # the embedding endpoint answers 503
        self.add_model(FakeModel("test-model"))
        self.add_model(FakeModel("embed-model", dims=64))

    # --- what tests use -------------------------------------------------------------------------
    def add_model(self, model: FakeModel) -> ScriptedLLM:
        self.models[model.name] = model
        return self

    def script(self, *steps: Step | str) -> ScriptedLLM:
        self.steps.extend(Step(text=s) if isinstance(s, str) else s for s in steps)
        return self

    @property
    def ollama_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def chats(self) -> list[dict[str, Any]]:
        return [body for path, body in self.requests if path in ("/api/chat", "/v1/chat/completions")]

    def start(self) -> ScriptedLLM:
        ready = threading.Event()
        self._thread = threading.Thread(target=self._serve, args=(ready,), name="scripted-llm", daemon=True)
        self._thread.start()
        if not ready.wait(10):
            raise RuntimeError("scripted LLM server did not start")
        return self

    def stop(self) -> None:
        if self._loop is not None:
            asyncio.run_coroutine_threadsafe(self._runner.cleanup(), self._loop).result(10)  # type: ignore[union-attr]
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(10)  # type: ignore[union-attr]

    def __enter__(self) -> ScriptedLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- the server -----------------------------------------------------------------------------
    def _serve(self, ready: threading.Event) -> None:
        self._loop = asyncio.new_event_loop()
        app = web.Application()
        app.add_routes([
            web.post("/api/chat", self._ollama_chat), web.post("/api/show", self._ollama_show),
            web.get("/api/tags", self._ollama_tags), web.get("/api/version", self._version),
            web.post("/v1/chat/completions", self._openai_chat), web.get("/v1/models", self._openai_models),
            web.post("/api/embed", self._embed), web.post("/v1/embeddings", self._embed),
        ])
        self._runner = web.AppRunner(app, access_log=None)
        self._loop.run_until_complete(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._loop.run_until_complete(site.start())
        self.port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        ready.set()
        self._loop.run_forever()

    async def _version(self, request: web.Request) -> web.Response:
        return web.json_response({"version": "0.30.0-scripted"})

    async def _ollama_tags(self, request: web.Request) -> web.Response:
        return web.json_response({"models": [{"name": name} for name in self.models]})

    async def _openai_models(self, request: web.Request) -> web.Response:
        return web.json_response({"object": "list", "data": [{"id": name, "object": "model"} for name in self.models]})

    async def _embed(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append((request.path, body))
        model = self.models.get(body.get("model", ""))
        if self.embeddings_down:
            return web.json_response({"error": "embedding model is loading"}, status=503)
        if model is None or not model.dims:
            return web.json_response({"error": f"model \"{body.get('model')}\" not found"}, status=404)
        texts = body["input"] if isinstance(body["input"], list) else [body["input"]]
        self.embed_calls += len(texts)
        vectors = [embedding(t, model.dims) for t in texts]
        if request.path == "/api/embed":
            return web.json_response({"model": model.name, "embeddings": vectors})
        return web.json_response({"object": "list", "data": [{"object": "embedding", "index": i, "embedding": v}
                                                               for i, v in enumerate(vectors)]})

    async def _ollama_show(self, request: web.Request) -> web.Response:
        body = await request.json()
        self.requests.append(("/api/show", body))
        model = self.models.get(body.get("model", ""))
        if model is None:
            return web.json_response({"error": f"model '{body.get('model')}' not found"}, status=404)
        capabilities = ["completion"] + ["tools"] * model.tools + ["thinking"] * model.thinking
        return web.json_response({
            "capabilities": capabilities,
            "details": {"parameter_size": f"{model.parameters / 1e9:.1f}B", "family": "llama"},
            "model_info": {"general.architecture": "llama", "general.parameter_count": model.parameters,
                           "llama.context_length": model.context_length},
        })

    def _next_step(self, body: dict[str, Any]) -> Step:
        if self.steps:
            return self.steps.popleft()
        if self.responder is not None:
            return self.responder(body)
        return Step(text="ok")

    def _check(self, body: dict[str, Any], step: Step) -> web.Response | None:
        """The errors a real server gives before streaming: unknown model, tools unsupported, busy."""
        model = self.models.get(body.get("model", ""))
        if model is None:
            return web.json_response({"error": f"model \"{body.get('model')}\" not found, try pulling it first"}, status=404)
        if body.get("tools") and not model.tools:
            return web.json_response({"error": f"registry.ollama.ai/library/{model.name} does not support tools"}, status=400)
        if step.status >= 400:
            headers = {"Retry-After": str(step.retry_after)} if step.retry_after is not None else None
            return web.json_response({"error": step.error or "scripted failure"}, status=step.status, headers=headers)
        return None

    def _prompt_tokens(self, body: dict[str, Any], step: Step) -> int:
        if step.prompt_eval_count is not None:
            return step.prompt_eval_count
        size = len(json.dumps(body.get("messages", []))) + len(json.dumps(body.get("tools", [])))
        tokens = size // 4
        model = self.models.get(body.get("model", ""))
        return min(tokens, model.reads_at_most) if model and model.reads_at_most else tokens

    async def _stream(self, request: web.Request, path: str, encode: Callable[[Step, dict[str, Any]], list[bytes]],
                      content_type: str) -> web.StreamResponse:
        body = await request.json()
        self.requests.append((path, body))
        step = self._next_step(body)
        if (failure := self._check(body, step)) is not None:
            return failure
        self.in_flight += 1
        self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            response = web.StreamResponse(headers={"Content-Type": content_type})
            await response.prepare(request)
            try:
                for piece in encode(step, body):
                    if step.delay:
                        await asyncio.sleep(step.delay)
                    await response.write(piece)
                    self.chunks_sent += 1
            except ConnectionResetError:  # the client stopped listening (a cancelled turn): normal
                return response
            if step.drop:
                request.transport.close()  # type: ignore[union-attr]  # the server went away mid-answer
                return response
            await response.write_eof()
            return response
        finally:
            self.in_flight -= 1

    async def _ollama_chat(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        if not body.get("messages"):  # Ollama's preload: an empty chat loads the model and answers at once
            self.requests.append(("/api/chat:load", body))
            if body.get("model") not in self.models:
                return web.json_response({"error": f"model \"{body.get('model')}\" not found"}, status=404)
            return web.json_response({"model": body["model"], "message": {"role": "assistant", "content": ""},
                                      "done": True, "done_reason": "load"})
        return await self._stream(request, "/api/chat", self._ollama_lines, "application/x-ndjson")

    async def _openai_chat(self, request: web.Request) -> web.StreamResponse:
        return await self._stream(request, "/v1/chat/completions", self._sse_events, "text/event-stream")

    def _ollama_lines(self, step: Step, body: dict[str, Any]) -> list[bytes]:
        model = body["model"]

        def line(message: dict[str, Any], **extra: Any) -> bytes:
            chunk = {"model": model, "created_at": time.strftime("%Y-%m-%dT%H:%M:%SZ"),
                     "message": {"role": "assistant", "content": "", **message}, "done": False, **extra}
            return json.dumps(chunk).encode() + b"\n"

        lines = [line({"content": "", "thinking": step.thinking[i:i + step.chunk]})
                 for i in range(0, len(step.thinking), step.chunk)]
        lines += [line({"content": step.text[i:i + step.chunk]}) for i in range(0, len(step.text), step.chunk)]
        if step.midstream_error:
            return [*lines, json.dumps({"error": step.error or "scripted mid-stream failure"}).encode() + b"\n"]
        if step.drop:
            return lines
        if step.tool_calls:  # Ollama sends the calls in a done:false chunk, arguments as an object
            calls = [{"function": {"index": i, "name": c["name"], "arguments": c.get("arguments", {})}}
                     for i, c in enumerate(step.tool_calls)]
            lines.append(line({"tool_calls": calls}))
        prompt = self._prompt_tokens(body, step)
        final = {"done": True, "done_reason": step.done_reason, "prompt_eval_count": prompt,
                 "eval_count": max(1, len(step.text) // 4), "total_duration": 1000, "load_duration": 10}
        lines.append(line({}, **final))
        return lines

    def _sse_events(self, step: Step, body: dict[str, Any]) -> list[bytes]:
        def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
            chunk = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "model": body["model"],
                     "choices": [{"index": 0, "delta": delta, "finish_reason": finish}], **extra}
            return b"data: " + json.dumps(chunk).encode() + b"\n\n"

        events = [event({"role": "assistant", "content": ""})]
        events += [event({"reasoning_content": step.thinking[i:i + step.chunk]})
                   for i in range(0, len(step.thinking), step.chunk)]
        events += [event({"content": step.text[i:i + step.chunk]}) for i in range(0, len(step.text), step.chunk)]
        if step.midstream_error:
            error = {"error": {"message": step.error or "scripted mid-stream failure", "type": "server_error"}}
            return [*events, b"data: " + json.dumps(error).encode() + b"\n\n"]
        if step.drop:
            return events
        for index, call in enumerate(step.tool_calls):  # OpenAI streams the arguments string in pieces
            arguments = call.get("arguments", {})
            text = arguments if isinstance(arguments, str) else json.dumps(arguments)
            half = len(text) // 2
            events.append(event({"tool_calls": [{"index": index, "id": f"call_{index}", "type": "function",
                                                 "function": {"name": call["name"], "arguments": text[:half]}}]}))
            rest: dict[str, Any] = {"index": index, "function": {"arguments": text[half:]}}
            if step.llama_cpp_style:
                rest = {"index": index, "id": f"call_{index}", "type": "function",
                        "function": {"name": call["name"], "arguments": text[half:]}}
            events.append(event({"tool_calls": [rest]}))
        finish = "tool_calls" if step.tool_calls else step.done_reason
        events.append(event({}, finish))
        usage = {"prompt_tokens": self._prompt_tokens(body, step), "completion_tokens": max(1, len(step.text) // 4)}
        events.append(b"data: " + json.dumps({"id": "chatcmpl-1", "choices": [], "usage": usage}).encode() + b"\n\n")
        events.append(b"data: [DONE]\n\n")
        return events
