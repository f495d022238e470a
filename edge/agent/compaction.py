"""History compaction: when a session outgrows its token budget, fold its oldest turns into a summary.

First the facts worth keeping are saved as memories (the memory flush), then the model summarises the
old turns; the summary rides in the system prompt and the turns are marked compacted (never deleted).
If the model fails, the recent turns are kept and the old ones simply leave the context. The cut is
always before a user message, so a tool call never loses its result and the latest message stays.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Any

import orjson

from edge.agent.context import message_tokens
from edge.agent.events import TurnEvent
from edge.agent.request import Request, stream_reply
from edge.errors import EdgeError
from edge.memory.memories import Memories
from edge.memory.store import Store, Usage
from edge.providers.base import Provider

log = logging.getLogger(__name__)
MAX_FACTS = 10
MESSAGE_CLIP = 600  # characters of one message that go into the transcript to summarise
SUMMARY_WORDS = 150
_FLUSH_SYSTEM = "You keep the long-term memory of a personal assistant. Be terse and literal."
_FLUSH_ASK = ("Below is part of a conversation between the user and their assistant. List the facts worth "
              "remembering for later conversations: about the user, their home, their devices, preferences, "
              "plans and promises. One fact per line, each line starting with \"- \". If there are none, write "
              "NONE.\n\n{transcript}")
_SUMMARY_SYSTEM = "You summarise conversations for a personal assistant's own later reference."
_SUMMARY_ASK = ("Summarise the conversation below in at most {words} words: what the user asked, what was "
                "done, what is still open. Write only the summary.\n\n{previous}{transcript}")


@dataclass(frozen=True)
class Outcome:
    compacted: int  # messages folded away
    facts: int  # memories saved by the flush
    summarised: bool  # False: the model failed, the old turns were dropped from the context unsummarised


def choose_cut(messages: list[dict[str, Any]], keep_tokens: int) -> int:
    """How many of the oldest messages to fold: the fewest that leave at most `keep_tokens` of recent
    messages, cut just before a user message, and never the latest user message."""
    users = [i for i, m in enumerate(messages) if m["role"] == "user"]
    if not users:
        return 0
    tokens_from = [0] * (len(messages) + 1)  # tokens_from[i]: messages[i:]
    for i in range(len(messages) - 1, -1, -1):
        tokens_from[i] = tokens_from[i + 1] + message_tokens(messages[i])
    return next((i for i in users if tokens_from[i] <= keep_tokens), users[-1])


def transcript(messages: list[dict[str, Any]], budget_tokens: int) -> str:
    lines = []
    for message in messages:
        content = (message.get("content") or "").strip()
        content = content if len(content) <= MESSAGE_CLIP else content[:MESSAGE_CLIP] + " …"
        if message["role"] == "tool":
            lines.append(f"Tool {message.get('name', '')} answered: {content}")
            continue
        if content:
            lines.append(f"{'User' if message['role'] == 'user' else 'Assistant'}: {content}")
        for call in message.get("tool_calls") or ():
            lines.append(f"Assistant used {call['name']}({orjson.dumps(call['arguments']).decode()})")
    text = "\n".join(lines)
    limit = budget_tokens * 7 // 2  # estimate_tokens' characters per token, inverted
    return text if len(text) <= limit else "…" + text[-limit:]  # the newest of the old part matters most


def parse_facts(text: str) -> list[str]:
    """Bullet lines only: a model that chats around its list ("Sure! Here are…") adds nothing."""
    facts = []
    for line in text.splitlines():
        line = line.strip()
        if line[:2] in ("- ", "* ", "• ") and 3 <= len(line[2:].strip()) <= 300:
            facts.append(line[2:].strip())
    return facts[:MAX_FACTS]


class Compactor:
    def __init__(self, provider: Provider, store: Store, memories: Memories | None) -> None:
        self.provider, self.store, self.memories = provider, store, memories

    async def compact(self, session_id: str, room_tokens: int, keep_tokens: int, ceiling: int,
                      reply_tokens: int, small: bool) -> Outcome:
        previous, messages = await self.store.conversation(session_id)
        count = choose_cut(messages, keep_tokens)
        if count == 0:
            return Outcome(0, 0, False)
        old = messages[:count]
        started = time.monotonic()
        text = transcript(old, room_tokens - 300)
        facts = await self._flush(session_id, text, ceiling, reply_tokens, small)
        summary = previous
        try:
            asked = _SUMMARY_ASK.format(words=SUMMARY_WORDS, transcript=text,
                                        previous=f"(Summary of what came before: {previous})\n\n" if previous else "")
            answer = await self._ask(_SUMMARY_SYSTEM, asked, ceiling, reply_tokens, small, session_id, started)
            summary = answer or previous
        except EdgeError as exc:
            log.warning("compaction: the model could not summarise (%s); keeping only the recent turns", exc)
            answer = ""
        await self.store.compact(session_id, count, summary)
        log.info("compaction: %d old messages folded into the summary (%d facts remembered)", count, facts)
        return Outcome(count, facts, bool(answer))

    async def _flush(self, session_id: str, text: str, ceiling: int, reply_tokens: int, small: bool) -> int:
        if self.memories is None:
            return 0
        try:
            answer = await self._ask(_FLUSH_SYSTEM, _FLUSH_ASK.format(transcript=text), ceiling, reply_tokens, small,
                                     session_id, time.monotonic())
            fresh = [(fact, "daily", None) for fact in parse_facts(answer) if not await self.memories.known(fact)]
            if fresh:  # one embedding call and one transaction for them all
                await self.memories.remember_many(fresh, session_id)
            return len(fresh)
        except EdgeError as exc:  # the facts stay in the (compacted, not deleted) messages
            log.warning("compaction: the memory flush failed (%s)", exc)
            return 0

    async def _ask(self, system: str, text: str, ceiling: int, reply_tokens: int, small: bool, session_id: str,
                   started: float) -> str:
        request = Request(system, [{"role": "user", "content": text}], [], ceiling, reply_tokens, small)
        reply = await stream_reply(self.provider, request, _discard, text_tools=False)
        await self.store.record_usage(Usage(session_id, self.provider.config.model, reply.done.prompt_tokens or 0,
                                            reply.done.completion_tokens or 0, 1, (time.monotonic() - started) * 1000))
        return reply.text.strip()


async def _discard(event: TurnEvent) -> None:
    """Compaction streams to nobody."""
