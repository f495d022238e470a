"""A clock the test moves by hand: the scheduler and heartbeat sleep on it, and wake when it passes."""

from __future__ import annotations

import asyncio
from datetime import datetime, timedelta


class FakeClock:
    def __init__(self, start: datetime) -> None:
        self.current = start
        self._sleepers: list[tuple[datetime, asyncio.Future[None]]] = []
        self._changed = asyncio.Condition()

    def now(self) -> datetime:
        return self.current

    async def sleep(self, seconds: float, wake: asyncio.Event | None = None) -> None:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (self.current + timedelta(seconds=max(seconds, 0)), future)
        if entry[0] <= self.current:
            await asyncio.sleep(0)
            return
        waiter = asyncio.ensure_future(wake.wait()) if wake else None
        async with self._changed:
            self._sleepers.append(entry)
            self._changed.notify_all()
        try:
            await asyncio.wait({future} | ({waiter} if waiter else set()), return_when=asyncio.FIRST_COMPLETED)
        finally:
            if waiter:
                waiter.cancel()
            if entry in self._sleepers:
                self._sleepers.remove(entry)

    async def sleepers(self, count: int) -> None:
        """Until `count` tasks are asleep on this clock (so that advancing it wakes them)."""
        async with self._changed:
            await asyncio.wait_for(self._changed.wait_for(lambda: len(self._sleepers) >= count), 5)

    async def advance(self, **delta: float) -> None:
        self.current += timedelta(**delta)
        for entry in list(self._sleepers):
            if entry[0] <= self.current:
                self._sleepers.remove(entry)  # at once: `sleepers()` then waits for the next sleep
                if not entry[1].done():
                    entry[1].set_result(None)
        await asyncio.sleep(0)
