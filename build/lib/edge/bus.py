"""The one way in and the one way out: every stimulus is an InboundMessage, every reply an OutboundMessage.

Channels publish inbound messages; the agent loop consumes them and delivers outbound messages, which
the bus routes to the channel they came from by name. Approvals asked by a turn are answered through
the bus too, and only by the sender who started the turn.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from edge.errors import EdgeError
from edge.tools.policy import Answer

log = logging.getLogger(__name__)
OutboundKind = Literal["delta", "tool", "notice", "approval", "final", "notify"]


@dataclass(frozen=True)
class InboundMessage:
    channel: str  # where the reply goes: "web", "webhook", "openai", "telegram", "cron", ...
    sender: str  # who sent it, as the channel knows them (a paired client, a chat id)
    session_key: str  # which conversation it continues
    text: str
    interactive: bool = False  # the sender can answer approval questions
    id: str = field(default_factory=lambda: uuid.uuid4().hex[:16])
    received_at: float = field(default_factory=time.time)


@dataclass(frozen=True)
class OutboundMessage:
    channel: str
    session_key: str
    reply_to: str  # the InboundMessage.id this answers
    kind: OutboundKind
    text: str = ""
    data: dict[str, Any] = field(default_factory=dict)  # kind-specific: approval id, tool outcome, model, ...


class Channel(Protocol):
    name: str

    async def send(self, message: OutboundMessage) -> None: ...


class BusFull(EdgeError):
    """Too many messages are waiting; the sender should try again shortly."""


class Bus:
    def __init__(self, max_pending: int = 100) -> None:
        self.inbound: asyncio.Queue[InboundMessage] = asyncio.Queue(max_pending)
        self.channels: dict[str, Channel] = {}
        self.activity = ActivityHub()
        self._approvals: dict[str, tuple[asyncio.Future[Answer], str, str]] = {}  # id → (answer, channel, sender)

    def register(self, channel: Channel) -> None:
        self.channels[channel.name] = channel

    def publish(self, message: InboundMessage) -> None:
        """Accept a message or refuse it at once (never block a channel's receive loop)."""
        try:
            self.inbound.put_nowait(message)
        except asyncio.QueueFull:
            raise BusFull(f"edge is busy ({self.inbound.maxsize} messages waiting); try again in a moment") from None

    async def deliver(self, message: OutboundMessage) -> None:
        channel = self.channels.get(message.channel)
        if channel is None:
            log.warning("no channel %r for a %s reply; dropped", message.channel, message.kind)
            return
        try:
            await channel.send(message)
        except Exception:  # a broken channel must not break the turn that is talking to it
            log.exception("channel %s failed to send a %s", message.channel, message.kind)

    async def notify(self, channel: str, text: str, target: str = "") -> bool:
        """Send a message that answers nothing (cron, heartbeat, hardware events) to a channel's default chat,
        or to `target` (a session key such as "telegram:12345"). False when there is no such channel."""
        if channel not in self.channels:
            return False
        await self.deliver(OutboundMessage(channel, target, "", "notify", text))
        return True

    def approver_for(self, inbound: InboundMessage) -> Callable[[Any], Awaitable[Answer]] | None:
        """An approver that asks the message's sender through its channel, or None if it cannot ask."""
        if not inbound.interactive:
            return None

        async def approve(request: Any) -> Answer:
            approval_id = uuid.uuid4().hex[:12]
            future: asyncio.Future[Answer] = asyncio.get_running_loop().create_future()
            self._approvals[approval_id] = (future, inbound.channel, inbound.sender)
            try:
                await self.deliver(OutboundMessage(inbound.channel, inbound.session_key, inbound.id, "approval",
                                                   f"Allow {request.describe()}?",
                                                   {"approval_id": approval_id, "tool": request.tool}))
                return await future
            finally:
                self._approvals.pop(approval_id, None)

        return approve

    def answer_approval(self, approval_id: str, answer: Answer, channel: str, sender: str) -> bool:
        """Resolve a pending approval; False when unknown, already answered, or asked of someone else."""
        pending = self._approvals.get(approval_id)
        if pending is None or pending[0].done() or (pending[1], pending[2]) != (channel, sender):
            return False
        pending[0].set_result(answer)
        return True


class ActivityHub:
    """Agent activity for dashboards (`/api/events`): each subscriber gets a bounded queue; a slow one
    loses old events rather than slowing the agent."""

    def __init__(self, per_subscriber: int = 200) -> None:
        self._subscribers: set[asyncio.Queue[dict[str, Any]]] = set()
        self._size = per_subscriber

    def subscribe(self) -> asyncio.Queue[dict[str, Any]]:
        queue: asyncio.Queue[dict[str, Any]] = asyncio.Queue(self._size)
        self._subscribers.add(queue)
        return queue

    def unsubscribe(self, queue: asyncio.Queue[dict[str, Any]]) -> None:
        self._subscribers.discard(queue)

    def emit(self, event_type: str, **data: Any) -> None:
        event = {"type": event_type, "at": round(time.time(), 3), **data}
        for queue in self._subscribers:
            if queue.full():
                queue.get_nowait()
            queue.put_nowait(event)
