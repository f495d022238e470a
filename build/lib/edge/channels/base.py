"""The channel for request/response transports (HTTP, WebSocket): replies collected per inbound message."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from edge.bus import Bus, InboundMessage, OutboundMessage


class ReplyStreams:
    """`async for reply in channel.exchange(message)` publishes the message and yields its replies until
    the final one. If the requester goes away, the turn still completes and is saved; its replies are dropped."""

    def __init__(self, name: str, bus: Bus) -> None:
        self.name, self.bus = name, bus
        self._waiting: dict[str, asyncio.Queue[OutboundMessage]] = {}
        bus.register(self)

    async def send(self, message: OutboundMessage) -> None:
        queue = self._waiting.get(message.reply_to)
        if queue is not None:
            queue.put_nowait(message)

    async def exchange(self, message: InboundMessage) -> AsyncIterator[OutboundMessage]:
        queue: asyncio.Queue[OutboundMessage] = asyncio.Queue()
        self._waiting[message.id] = queue
        try:
            self.bus.publish(message)
            while True:
                reply = await queue.get()
                yield reply
                if reply.kind == "final":
                    return
        finally:
            del self._waiting[message.id]

    async def answer(self, message: InboundMessage) -> OutboundMessage | None:
        """The final reply only, for transports that do not stream (exchange() ends with it)."""
        replies = [reply async for reply in self.exchange(message)]
        return replies[-1] if replies else None
