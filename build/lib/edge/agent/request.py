"""One model request inside a turn: fit the messages into the context, stream the reply to the channel.

Text that might be a tool call written as text (it starts with `{`, `<tool_call>`, a fence) is held back
until the reply is complete, so the user never sees raw JSON that edge then executes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from edge.agent.context import choose_num_ctx, estimate_tokens, fit_history, message_tokens
from edge.agent.events import Delta, Sink
from edge.agent.parse import could_be_tool_call
from edge.providers.base import Done, Provider, TextDelta, ToolCalls
from edge.tools.registry import ToolCall

TRUNCATION_RATIO = 1.5  # our estimate is ~15% high by design; far above that, the server cut the prompt


@dataclass
class Reply:
    text: str = ""
    calls: list[ToolCall] = field(default_factory=list)
    done: Done = field(default_factory=lambda: Done(""))
    streamed: bool = False  # the text already reached the channel
    truncated_to: int | None = None  # prompt tokens the server really read, when it cut the prompt


@dataclass(frozen=True)
class Request:
    system: str
    messages: list[dict[str, Any]]  # history and this turn, oldest first
    tools: list[dict[str, Any]]
    ceiling: int  # most context tokens we may ask for
    reply_tokens: int
    small: bool


def fixed_tokens(system: str, tools: list[dict[str, Any]]) -> int:
    """What every request spends before the first message: the system prompt and the tool specs."""
    return estimate_tokens(system) + estimate_tokens(orjson.dumps(tools).decode())


def history_room(ceiling: int, reply_tokens: int, small: bool, fixed: int) -> int:
    """Tokens left for the conversation. Small models get half the context for the whole prompt:
    their quality drops fast as it fills."""
    return max((ceiling // 2 if small else ceiling - reply_tokens) - fixed, 0)


def build_messages(request: Request) -> tuple[list[dict[str, Any]], int, int]:
    """(messages to send, num_ctx, estimated prompt tokens). Oldest turns are dropped to fit;
    the system prompt and the latest user message never are."""
    fixed = fixed_tokens(request.system, request.tools)
    messages = fit_history(request.messages, history_room(request.ceiling, request.reply_tokens, request.small, fixed))
    if not messages or messages[0]["role"] != "user":
        last_user = max(i for i, m in enumerate(request.messages) if m["role"] == "user")
        messages = request.messages[last_user:]
    estimate = fixed + sum(message_tokens(m) for m in messages)
    num_ctx = choose_num_ctx(estimate + request.reply_tokens, request.ceiling)
    return [{"role": "system", "content": request.system}, *messages], num_ctx, estimate


def as_text_tool_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """For a model without native tools: calls and results written as text it can read back."""
    result = []
    for message in messages:
        if message.get("tool_calls"):
            calls = "".join(
                "<tool_call>" + orjson.dumps({"name": c["name"], "arguments": c["arguments"]}).decode() + "</tool_call>"
                for c in message["tool_calls"]
            )
            result.append({"role": "assistant", "content": (message.get("content") or "") + calls})
        elif message["role"] == "tool":
            result.append({"role": "user", "content": f'<tool_result name="{message.get("name", "")}">\n{message["content"]}\n</tool_result>'})
        else:
            result.append(message)
    return result


async def stream_reply(provider: Provider, request: Request, sink: Sink, text_tools: bool) -> Reply:
    messages, num_ctx, estimate = build_messages(request)
    if text_tools:
        messages = as_text_tool_messages(messages)
    reply = Reply()
    hold: bool | None = None  # undecided until the first visible characters arrive
    async for event in provider.chat(messages, request.tools, num_ctx=num_ctx):
        if isinstance(event, TextDelta):
            reply.text += event.text
            if hold is None and reply.text.strip():
                hold = could_be_tool_call(reply.text)
                if not hold:
                    await sink(Delta(reply.text))
                    reply.streamed = True
            elif hold is False:
                await sink(Delta(event.text))
        elif isinstance(event, ToolCalls):
            reply.calls.extend(event.calls)
        elif isinstance(event, Done):
            reply.done = event
    seen = reply.done.prompt_tokens
    if seen and estimate > TRUNCATION_RATIO * seen and estimate > 256:
        reply.truncated_to = seen
    return reply
