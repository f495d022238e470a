"""systemd's notify protocol (READY, STATUS, WATCHDOG, STOPPING) and the loop-lag watchdog, without libsystemd.

WATCHDOG=1 is sent at half of WATCHDOG_USEC, and only while the event loop is responsive: the same task
measures how late its own wake-ups are, so a wedged or crawling loop stops the pings and systemd restarts
the service, which is the point of the watchdog.
"""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping

log = logging.getLogger(__name__)


class Notifier:
    def __init__(self, environ: Mapping[str, str] | None = None) -> None:
        environ = os.environ if environ is None else environ
        address = environ.get("NOTIFY_SOCKET", "")
        self._address = "\0" + address[1:] if address.startswith("@") else address  # "@": abstract socket
        self._socket = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) if address else None
        if self._socket is not None:
            self._socket.setblocking(False)
        usec, pid = environ.get("WATCHDOG_USEC", ""), environ.get("WATCHDOG_PID", "")
        for_us = not pid or pid == str(os.getpid())
        self.watchdog_interval = int(usec) / 2e6 if usec.isdigit() and int(usec) > 0 and for_us else None
        self._warned = False

    def send(self, *assignments: str) -> None:
        if self._socket is None:
            return
        try:
            self._socket.sendto("\n".join(assignments).encode(), self._address)
        except OSError as exc:
            if not self._warned:
                log.warning("cannot notify systemd at %s: %s", self._address, exc)
                self._warned = True

    def ready(self, status: str) -> None:
        self.send("READY=1", f"STATUS={status}")

    def status(self, status: str) -> None:
        self.send(f"STATUS={status}")

    def stopping(self) -> None:
        self.send("STOPPING=1", "STATUS=stopping")

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()


class LoopMonitor:
    """Measures event-loop lag and feeds the watchdog; run under supervise() like any service."""

    def __init__(self, notifier: Notifier) -> None:
        self.notifier = notifier
        interval = notifier.watchdog_interval
        self.period = min(0.5, interval / 4) if interval else 0.5
        self.max_lag = min(interval / 2, 5.0) if interval else 5.0  # later than this = not responsive
        self.lag = 0.0
        self.pings = 0

    async def run(self, started: Callable[[], None]) -> None:
        interval = self.notifier.watchdog_interval
        next_ping = time.monotonic()
        started()
        while True:
            before = time.monotonic()
            await asyncio.sleep(self.period)
            now = time.monotonic()
            self.lag = max(0.0, now - before - self.period)
            if self.lag > self.max_lag:
                log.warning("event loop was blocked for %.1f s; withholding the watchdog ping", self.lag)
                continue
            if interval and now >= next_ping:
                self.notifier.send("WATCHDOG=1")
                self.pings += 1
                next_ping = now + interval
