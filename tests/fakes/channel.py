"""A channel that keeps what it is sent: notifications and final replies, in order."""

from __future__ import annotations

import asyncio

from edge.bus import OutboundMessage


class Collector:
    def __init__(self, name: str) -> None:
        self.name = name
        self.messages: asyncio.Queue[OutboundMessage] = asyncio.Queue()

    async def send(self, message: OutboundMessage) -> None:
        if message.kind in ("final", "notify"):
            self.messages.put_nowait(message)

    async def next(self) -> OutboundMessage:
        return await asyncio.wait_for(self.messages.get(), 10)
