"""A serial device emulator on a pty: a thread answers a small line protocol, and it can be unplugged.

`TEMP?` → `21.5`, `PING` → `PONG`, `ECHO x` → `x`; `say(line)` makes the device send a line on its own.
The device appears at a stable path (a symlink, like /dev/serial/by-id/...) that vanishes when unplugged.
"""

from __future__ import annotations

import contextlib
import os
import select
import threading
import tty
from pathlib import Path


class SerialDevice:
    def __init__(self, path: Path, answers: dict[str, str] | None = None) -> None:
        self.path = path
        self.answers = {"TEMP?": "21.5", "PING": "PONG", **(answers or {})}
        self.received: list[str] = []
        self._master = -1
        self._slave = -1
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()

    def plug_in(self) -> SerialDevice:
        self._master, self._slave = os.openpty()
        tty.setraw(self._master)
        tty.setraw(self._slave)
        self.path.unlink(missing_ok=True)
        self.path.symlink_to(os.ttyname(self._slave))
        self._stop.clear()
        self._thread = threading.Thread(target=self._serve, name="fake-serial-device", daemon=True)
        self._thread.start()
        return self

    def unplug(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5)
        self.path.unlink(missing_ok=True)
        for fd in (self._master, self._slave):
            with contextlib.suppress(OSError):
                os.close(fd)

    def say(self, line: str) -> None:
        os.write(self._master, line.encode() + b"\n")

    def _serve(self) -> None:
        buffer = b""
        while not self._stop.is_set():
            ready, _, _ = select.select([self._master], [], [], 0.05)
            if not ready:
                continue
            try:
                buffer += os.read(self._master, 1024)
            except OSError:
                return
            while b"\n" in buffer:
                raw, buffer = buffer.split(b"\n", 1)
                line = raw.decode().strip()
                self.received.append(line)
                answer = line[5:] if line.startswith("ECHO ") else self.answers.get(line)
                if answer is not None:
                    self.say(answer)
