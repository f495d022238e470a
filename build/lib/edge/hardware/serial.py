"""Serial devices by name: a reader thread per port, reconnection when a USB device comes back, queries.

A port runs as a supervised service. Lines the device sends while nobody is asking go to a short
buffer (for serial_read) and, when `events = true`, out as HardwareEvents for triggers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections import deque
from collections.abc import Callable
from typing import Any

from edge.config import SerialPortConfig
from edge.errors import ToolError
from edge.hardware.events import EventQueue, HardwareEvent

log = logging.getLogger(__name__)
RECONNECT_S = 2.0
MAX_SEND_BYTES = 256
MAX_LINE_CHARS = 1024


class SerialPort:
    def __init__(self, config: SerialPortConfig, events: EventQueue | None, reconnect_s: float = RECONNECT_S) -> None:
        self.config, self._events, self._reconnect_s = config, events, reconnect_s
        self.connected = False
        self.last_error = "not opened yet"
        self.recent: deque[str] = deque(maxlen=50)
        self._port: Any = None
        self._answers: asyncio.Queue[str] | None = None  # set while a query waits for its line
        self._lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self.first_attempt = asyncio.Event()  # set once the port was tried: a one-shot turn waits for it
        self.on_state: Callable[[bool, str], None] | None = None  # (connected, error): for /health

    async def run(self, started: Callable[[], None]) -> None:
        self._loop = asyncio.get_running_loop()
        started()  # "up" means watching the port; `connected` says whether the device is there
        while True:
            try:
                self._port = await asyncio.to_thread(self._open)
            except OSError as exc:  # SerialException is an OSError: unplugged, no permission, wrong path
                self._lost(exc)
                await asyncio.sleep(self._reconnect_s)
                continue
            self._set(True, "")
            log.info("serial %s: connected (%s)", self.config.name, self.config.url)
            stop = threading.Event()
            ended: asyncio.Future[BaseException] = self._loop.create_future()
            threading.Thread(target=self._read, args=(stop, ended), name=f"edge-serial-{self.config.name}",
                             daemon=True).start()
            try:
                self._lost(await ended)
            finally:
                stop.set()
                with contextlib.suppress(Exception):
                    self._port.close()
            await asyncio.sleep(self._reconnect_s)

    def _open(self) -> Any:
        import serial
        from serial.urlhandler import protocol_loop, protocol_socket  # noqa: F401 - literal, for the standalone build

        if self.config.url.startswith("/") and "://" not in self.config.url:
            return serial.Serial(self.config.url, self.config.baud, timeout=0.2)
        return serial.serial_for_url(self.config.url, baudrate=self.config.baud, timeout=0.2)

    def _lost(self, exc: BaseException) -> None:
        message = str(exc) or type(exc).__name__
        if self.connected or message != self.last_error:
            log.warning("serial %s: %s; retrying every %.0f s", self.config.name, message, self._reconnect_s)
        self._set(False, message)

    def _set(self, connected: bool, error: str) -> None:
        self.connected, self.last_error = connected, error
        self.first_attempt.set()
        if self.on_state is not None:
            self.on_state(connected, error)

    def _read(self, stop: threading.Event, ended: asyncio.Future[BaseException]) -> None:
        """The port's thread: lines in, until the device goes away; the only code that blocks on it."""
        assert self._loop is not None
        newline = self.config.newline.encode(self.config.encoding)
        buffer = b""
        try:
            while not stop.is_set():
                chunk = self._port.read(256)
                if chunk == b"" and not self._port.is_open:
                    raise OSError("the port was closed")
                buffer += chunk
                while newline in buffer:
                    raw, buffer = buffer.split(newline, 1)
                    line = raw.decode(self.config.encoding, errors="replace").strip("\r")[:MAX_LINE_CHARS]
                    self._loop.call_soon_threadsafe(self._on_line, line)
                buffer = buffer[-MAX_LINE_CHARS:]
            raise OSError("stopped")
        except Exception as exc:  # any failure of the device ends this connection; run() reconnects
            self._loop.call_soon_threadsafe(_resolve, ended, exc)

    def _on_line(self, line: str) -> None:
        if self._answers is not None:
            self._answers.put_nowait(line)
            return
        self.recent.append(line)
        if self.config.events and self._events is not None:
            self._events.emit_threadsafe(HardwareEvent("serial", self.config.name, "line", line))

    def _stop_listening(self) -> None:
        """Lines that came in right behind the awaited one are not lost: they take the usual way."""
        answers, self._answers = self._answers, None
        while answers is not None and not answers.empty():
            self._on_line(answers.get_nowait())

    def _require(self) -> None:
        if not self.connected:
            raise ToolError(f"serial device {self.config.name!r} is not connected ({self.last_error}); "
                            "it is used again as soon as it is back")

    async def send(self, data: str) -> int:
        self._require()
        payload = (data + self.config.newline).encode(self.config.encoding)
        if len(payload) > MAX_SEND_BYTES:
            raise ToolError(f"{len(payload)} bytes is too much to send at once; the limit is {MAX_SEND_BYTES}")
        try:
            await asyncio.to_thread(self._port.write, payload)
        except Exception as exc:  # unplugged between the check and the write
            raise ToolError(f"serial device {self.config.name!r}: the write failed ({exc})") from None
        return len(payload)

    async def query(self, data: str, timeout_s: float) -> str:
        """Send a line and return the device's next line (one query at a time per port)."""
        async with self._lock:
            self._answers = asyncio.Queue()
            try:
                await self.send(data)
                return await asyncio.wait_for(self._answers.get(), timeout_s)
            except TimeoutError:
                raise ToolError(f"{self.config.name!r} did not answer within {timeout_s:g} s") from None
            finally:
                self._stop_listening()

    async def read(self, timeout_s: float) -> list[str]:
        """The lines received since the last read; waits up to timeout_s for one if there are none."""
        self._require()
        if not self.recent:
            self._answers = asyncio.Queue()
            try:
                self.recent.append(await asyncio.wait_for(self._answers.get(), timeout_s))
            except TimeoutError:
                return []
            finally:
                self._stop_listening()
        lines = list(self.recent)
        self.recent.clear()
        return lines


def _resolve(future: asyncio.Future[BaseException], exc: BaseException) -> None:
    if not future.done():  # the task may already be gone (cancelled at shutdown)
        future.set_result(exc)
