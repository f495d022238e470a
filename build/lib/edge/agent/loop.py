"""The agent loop: takes InboundMessages off the bus, runs turns, and sends OutboundMessages back.

Slash commands are answered at once. Turns of one session run in order; at most `max_concurrent_turns`
run at a time; a new message may interrupt its session's running turn (`[agent] interrupt`); a sender
over `sender_messages_per_minute` is told to slow down instead of starting another turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from edge.agent import commands
from edge.agent.events import Delta, Notice, ToolActivity, TurnEvent
from edge.bus import Bus, InboundMessage, OutboundMessage
from edge.config import AgentConfig
from edge.errors import EdgeError
from edge.metrics import Counters
from edge.ratelimit import RateLimiter

if TYPE_CHECKING:
    from edge.app import Runtime

log = logging.getLogger(__name__)


@dataclass
class _Session:
    waiting: deque[InboundMessage] = field(default_factory=deque)
    worker: asyncio.Task[None] | None = None
    turn: asyncio.Task[None] | None = None


class AgentLoop:
    def __init__(self, bus: Bus, runtime: Runtime, config: AgentConfig, counters: Counters) -> None:
        self.bus, self.runtime, self.config, self.counters = bus, runtime, config, counters
        self._sessions: dict[str, _Session] = {}
        self._slots = asyncio.Semaphore(max(1, config.max_concurrent_turns))
        self._brake = RateLimiter(config.sender_messages_per_minute)

    @property
    def turns_running(self) -> int:
        return sum(1 for s in self._sessions.values() if s.turn is not None and not s.turn.done())

    async def run(self, started) -> None:  # type: ignore[no-untyped-def]
        async with asyncio.TaskGroup() as workers:
            started()
            while True:
                message = await self.bus.inbound.get()
                await self._accept(message, workers)

    async def _accept(self, message: InboundMessage, workers: asyncio.TaskGroup) -> None:
        if not self._brake.allow(f"{message.channel}:{message.sender}"):
            self.counters.messages_rejected_total += 1
            wait = self._brake.retry_after(f"{message.channel}:{message.sender}")
            await self._final(message, f"You are sending messages faster than I can take them; wait {wait:.0f} s.")
            return
        session = self._sessions.setdefault(message.session_key, _Session())
        if commands.is_command(message.text):
            context = commands.CommandContext(self.runtime, message.session_key, lambda: _stop(session))
            try:
                reply = await commands.handle(message.text, context)
            except EdgeError as exc:
                reply = f"That command failed: {exc}"
            await self._final(message, reply)
            return
        if self.config.interrupt:
            _stop(session)
        session.waiting.append(message)
        if session.worker is None or session.worker.done():
            session.worker = workers.create_task(self._work(message.session_key, session))

    async def _work(self, key: str, session: _Session) -> None:
        """Run the session's messages one after another; the worker ends when none are left."""
        try:
            while session.waiting:
                message = session.waiting.popleft()
                async with self._slots:
                    session.turn = asyncio.create_task(self._turn(message))
                    try:
                        await asyncio.wait({session.turn})  # a stopped turn must not stop the worker
                    except asyncio.CancelledError:
                        session.turn.cancel()  # shutdown: the turn saves what it has, then we go
                        await asyncio.wait({session.turn})
                        raise
        finally:
            if self._sessions.get(key) is session and not session.waiting:
                del self._sessions[key]

    async def _turn(self, message: InboundMessage) -> None:
        runtime = self.runtime

        async def sink(event: TurnEvent) -> None:
            if isinstance(event, Delta):
                await self._send(message, "delta", event.text)
            elif isinstance(event, ToolActivity):
                data = {"tool": event.name, "outcome": event.result.outcome if event.result else "started"}
                await self._send(message, "tool", "", data)
                if event.result is not None:
                    self.bus.activity.emit("tool", channel=message.channel, **data)
            elif isinstance(event, Notice):
                await self._send(message, "notice", event.text)

        self.bus.activity.emit("turn_started", channel=message.channel, session=message.session_key)
        try:
            session_id = await runtime.store.current_session(message.session_key)
            result = await runtime.agent.turn(session_id, message.text, sink, self.bus.approver_for(message))
        except asyncio.CancelledError:
            await self._final(message, "[stopped]", {"stopped": True})
            self.bus.activity.emit("turn_stopped", channel=message.channel, session=message.session_key)
            raise
        except EdgeError as exc:  # e.g. the disk is full and the message could not even be saved
            self.counters.turn_errors_total += 1
            await self._final(message, f"Sorry, I could not take that message: {exc}", {"error": str(exc)})
            return
        except Exception as exc:  # a bug must cost one answer, not the daemon
            log.exception("turn failed")
            self.counters.turn_errors_total += 1
            await self._final(message, f"Sorry, something went wrong inside edge ({type(exc).__name__}).",
                              {"error": type(exc).__name__})
            return
        counters = self.counters
        counters.turns_total += 1
        counters.turn_errors_total += bool(result.error)
        counters.tool_calls_total += result.tool_calls
        counters.prompt_tokens_total += result.prompt_tokens
        counters.completion_tokens_total += result.completion_tokens
        data = {"model": runtime.provider.config.model, "tool_calls": result.tool_calls, "error": result.error,
                "prompt_tokens": result.prompt_tokens, "completion_tokens": result.completion_tokens}
        await self._final(message, result.text, data)
        self.bus.activity.emit("turn_finished", channel=message.channel, session=message.session_key,
                               tool_calls=result.tool_calls, error=result.error)

    async def _send(self, message: InboundMessage, kind, text: str, data: dict | None = None) -> None:  # type: ignore[no-untyped-def]
        await self.bus.deliver(OutboundMessage(message.channel, message.session_key, message.id, kind, text, data or {}))

    async def _final(self, message: InboundMessage, text: str, data: dict | None = None) -> None:
        await self._send(message, "final", text, data)


def _stop(session: _Session) -> bool:
    if session.turn is None or session.turn.done():
        return False
    session.turn.cancel()
    return True
