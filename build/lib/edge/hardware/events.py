"""Hardware events (a button press, motion, a serial line) and the triggers that turn them into messages.

Events arrive from gpiozero's and pyserial's threads through `EventQueue.emit_threadsafe()`, the one
bridge into the event loop. The Triggers service matches them against `[[triggers]]` and either sends a
notification or runs the agent with a prompt — at most once per `min_interval_s` per trigger.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from edge.bus import Bus, BusFull, InboundMessage
from edge.config import TriggerConfig

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class HardwareEvent:
    source: str  # "gpio" or "serial"
    name: str  # the device or port name from the config
    kind: str  # "pressed", "released", "motion", "no_motion", "on", "off", "line"
    value: str = ""

    @property
    def key(self) -> str:
        return f"{self.source}:{self.name}:{self.kind}"


class EventQueue:
    def __init__(self, loop: asyncio.AbstractEventLoop, size: int = 256) -> None:
        self._loop = loop
        self.queue: asyncio.Queue[HardwareEvent] = asyncio.Queue(size)

    def emit_threadsafe(self, event: HardwareEvent) -> None:
        """Called from device threads: the only way hardware callbacks enter the event loop."""
        self._loop.call_soon_threadsafe(self._put, event)

    def _put(self, event: HardwareEvent) -> None:
        if self.queue.full():  # a storm of edges: the oldest events matter least
            self.queue.get_nowait()
        self.queue.put_nowait(event)


class Triggers:
    def __init__(self, triggers: tuple[TriggerConfig, ...], events: EventQueue, bus: Bus,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.triggers, self.events, self.bus, self._clock = triggers, events, bus, clock
        self._last_fired: dict[int, float] = {}

    async def run(self, started: Callable[[], None]) -> None:
        started()
        while True:
            event = await self.events.queue.get()
            self.bus.activity.emit("hardware", event=event.key, value=event.value)
            for index, trigger in enumerate(self.triggers):
                if self._matches(trigger, event):
                    await self._fire(index, trigger, event)

    @staticmethod
    def _matches(trigger: TriggerConfig, event: HardwareEvent) -> bool:
        if trigger.event != event.key:
            return False
        return not trigger.match or re.search(trigger.match, event.value) is not None

    async def _fire(self, index: int, trigger: TriggerConfig, event: HardwareEvent) -> None:
        now = self._clock()
        if now - self._last_fired.get(index, -1e18) < trigger.min_interval_s:
            log.info("trigger %s held back (fired less than %.0f s ago)", trigger.event, trigger.min_interval_s)
            return
        self._last_fired[index] = now
        text = trigger.text.replace("{value}", event.value) or f"{event.name}: {event.kind} {event.value}".strip()
        if trigger.action == "notify":
            if not await self.bus.notify(trigger.channel, text):
                log.warning("trigger %s: channel %r is not running", trigger.event, trigger.channel)
            return
        try:  # the agent's answer goes to the channel's default chat
            self.bus.publish(InboundMessage(trigger.channel, "hardware", f"hardware:{event.source}:{event.name}", text))
        except BusFull as exc:
            log.warning("trigger %s dropped: %s", trigger.event, exc)
