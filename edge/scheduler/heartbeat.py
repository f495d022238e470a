"""The heartbeat in `edge run`: every N minutes (within active hours) the agent reads HEARTBEAT.md.

While the file holds no open task, no model call is made at all. Otherwise one turn runs; an answer of
HEARTBEAT_OK sends nothing, anything else goes to the configured channel.
"""

from __future__ import annotations

import asyncio
import logging
import re
from datetime import datetime, time, tzinfo
from pathlib import Path

from edge.bus import Bus, InboundMessage
from edge.channels.base import ReplyStreams
from edge.config import HeartbeatConfig
from edge.scheduler.cron import CHANNEL, Clock, deliver

log = logging.getLogger(__name__)
OK = "HEARTBEAT_OK"
FILE = "HEARTBEAT.md"
PROMPT = (f"[heartbeat] These are your standing tasks from {FILE}. Do what is due now, using your tools. "
          f"If nothing needs the user's attention, answer exactly {OK} and nothing else.\n\n")
_DONE = re.compile(r"^[-*]\s*\[[xX]\]")  # a ticked checkbox


def open_tasks(text: str) -> list[str]:
    """The lines that ask for something: not headings, comments, ticked boxes or the template's hint."""
    text = re.sub(r"<!--.*?-->", "", text, flags=re.S)
    text = re.sub(r"^\(.*?\)\s*$", "", text, flags=re.S | re.M)  # a parenthesised hint, on one line or several
    return [line.strip() for line in text.splitlines()
            if line.strip() and not line.lstrip().startswith("#") and not _DONE.match(line.strip())]


def is_ok(answer: str) -> bool:
    """HEARTBEAT_OK, perhaps with punctuation or three words around it ("All quiet."), means "nothing to say"."""
    return OK in answer and len(re.findall(r"\w+", answer.replace(OK, ""))) <= 3


def within(hours: str, moment: datetime, zone: tzinfo) -> bool:
    if not hours:
        return True
    start_text, end_text = hours.split("-")
    start, end = (time(int(t[:2]) % 24, int(t[3:])) if t != "24:00" else time.max for t in (start_text, end_text))
    now = moment.astimezone(zone).time()
    return start <= now < end if start <= end else now >= start or now < end  # "22:00-06:00" spans midnight


class Heartbeat:
    def __init__(self, config: HeartbeatConfig, workspace: Path, bus: Bus, streams: ReplyStreams, zone: tzinfo,
                 clock: Clock | None = None) -> None:
        self.config, self.workspace, self.bus, self.streams, self.zone = config, workspace, bus, streams, zone
        self.clock = clock or Clock()
        self.beats = 0  # heartbeats that reached the model

    async def run(self, started) -> None:  # type: ignore[no-untyped-def]
        started()
        while True:
            await self.clock.sleep(self.config.interval_min * 60)
            if within(self.config.active_hours, self.clock.now(), self.zone):
                await self.beat()

    async def beat(self) -> str | None:
        """One heartbeat; returns what was sent to the user, if anything."""
        try:
            text = await asyncio.to_thread((self.workspace / FILE).read_text, encoding="utf-8")
        except OSError:
            return None
        tasks = open_tasks(text)
        if not tasks:
            return None  # nothing to do: no model call at all
        self.beats += 1
        reply = await self.streams.answer(InboundMessage(CHANNEL, "heartbeat", "heartbeat", PROMPT + "\n".join(tasks)))
        if reply is None or reply.data.get("error"):
            log.warning("heartbeat: no answer (%s)", reply.text if reply else "none")
            return None
        answer = reply.text.strip()
        if not answer or is_ok(answer):
            return None
        log.info("heartbeat: %s", answer)
        if not await deliver(self.bus, self.config.channel, answer):
            log.warning("heartbeat: the %s channel is not running; it had this to say: %s", self.config.channel, answer)
        return answer
