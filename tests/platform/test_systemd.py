"""The notify protocol against a datagram socket the test opens, and the watchdog that stops when the loop is blocked."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import os
import socket
import time

from edge.platform.systemd import LoopMonitor, Notifier


@contextlib.contextmanager
def notify_socket(tmp_path, abstract: bool = False):  # type: ignore[no-untyped-def]
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    if abstract:
        name = f"edge-test-{os.getpid()}-{time.monotonic_ns()}"
        sock.bind("\0" + name)
        address = "@" + name
    else:
        address = str(tmp_path / "notify.sock")
        sock.bind(address)
    sock.setblocking(False)
    try:
        yield sock, address
    finally:
        sock.close()


def received(sock: socket.socket) -> list[tuple[float, str]]:
    messages = []
    with contextlib.suppress(BlockingIOError):
        while True:
            messages.append((time.monotonic(), sock.recv(4096).decode()))
    return messages


def test_ready_status_stopping(tmp_path):
    for abstract in (False, True):
        with notify_socket(tmp_path, abstract) as (sock, address):
            notifier = Notifier({"NOTIFY_SOCKET": address})
            notifier.ready("agent up")
            notifier.status("gateway failed")
            notifier.stopping()
            notifier.close()
            assert [m for _, m in received(sock)] == ["READY=1\nSTATUS=agent up", "STATUS=gateway failed",
                                                      "STOPPING=1\nSTATUS=stopping"]


def test_no_socket_no_watchdog_no_error():
    notifier = Notifier({})
    notifier.ready("x")  # nothing to talk to: silently nothing
    assert notifier.watchdog_interval is None
    assert Notifier({"WATCHDOG_USEC": "2000000", "WATCHDOG_PID": "1"}).watchdog_interval is None  # not our pid


async def test_watchdog_pings_at_half_the_interval_and_stops_while_the_loop_is_blocked(tmp_path, caplog):
    with notify_socket(tmp_path) as (sock, address):
        monitor = LoopMonitor(Notifier({"NOTIFY_SOCKET": address, "WATCHDOG_USEC": "400000"}))
        task = asyncio.create_task(monitor.run(lambda: None))
        pings: list[float] = []

        async def collect_until(count: int) -> None:
            while len(pings) < count:
                pings.extend(t for t, m in received(sock) if m == "WATCHDOG=1")
                await asyncio.sleep(0.01)

        await asyncio.wait_for(collect_until(4), 5)
        steady = [b - a for a, b in itertools.pairwise(pings)]
        received(sock)  # drained; the monitor shares this loop, so nothing can be sent until we await again
        time.sleep(1.0)  # noqa: ASYNC251 -- the point: a wedged event loop, as a blocking call makes it
        unblocked_at = time.monotonic()
        after: list[float] = []
        while len(after) < 2:
            after.extend(t for t, m in received(sock) if m == "WATCHDOG=1")
            await asyncio.sleep(0.01)
        task.cancel()
    assert all(0.15 <= gap <= 0.35 for gap in steady), steady  # WATCHDOG_USEC / 2 = 0.2 s
    # The first wake-up after the block sees ~1 s of lag and withholds its ping; pings resume a period later.
    assert after[0] - unblocked_at >= monitor.period * 0.9
    assert "event loop was blocked for 0.9 s" in caplog.text or "event loop was blocked for 1.0 s" in caplog.text
