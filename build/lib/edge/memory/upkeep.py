"""The memory upkeep service in `edge run`: every few hours, hygiene, vectors for memories that missed
one, and MEMORY_SNAPSHOT.md rewritten when (and only when) memory changed — the SD card is spared."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from pathlib import Path

from edge.errors import EdgeError
from edge.memory.memories import Memories

log = logging.getLogger(__name__)


class MemoryUpkeep:
    def __init__(self, memories: Memories, snapshot: Path, interval_s: float) -> None:
        self.memories, self.snapshot, self.interval_s = memories, snapshot, interval_s
        self._written: tuple[int, float, int] | None = None  # the memory state the snapshot on disk shows

    async def run(self, started: Callable[[], None]) -> None:
        started()
        while True:
            try:
                await self.tidy()
            except EdgeError as exc:  # a full disk: say so, try again next time; memory itself is intact
                log.error("memory upkeep: %s", exc)
            await asyncio.sleep(self.interval_s)

    async def tidy(self) -> dict[str, int]:
        done = await self.memories.hygiene()
        done["embedded"] = await self.memories.backfill()
        fingerprint = await self.memories.fingerprint()
        done["snapshot"] = 0
        if fingerprint != self._written and (fingerprint[0] or self.snapshot.exists()):
            done["snapshot"] = await self.memories.write_snapshot(self.snapshot)
            self._written = fingerprint
        if any(done.values()):
            log.info("memory upkeep: %s", ", ".join(f"{k} {v}" for k, v in done.items()))
        return done
