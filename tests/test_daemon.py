"""`edge run` as systemd runs it: READY, STATUS and WATCHDOG on a notify socket the test opens; SIGTERM."""

from __future__ import annotations

import contextlib
import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request

import apsw

from tests.conftest import edge_env
from tests.fakes.llm_server import ScriptedLLM, Step


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, tmp_path, llm: ScriptedLLM | None, program: tuple[str, ...] = (sys.executable, "-m", "edge"),  # type: ignore[no-untyped-def]
                 **env: str) -> None:
        self.port = free_port()
        self.notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        self.notify.bind(str(tmp_path / "notify.sock"))
        self.notify.settimeout(10)
        environment = edge_env(tmp_path, llm, EDGE_GATEWAY__PORT=str(self.port), NOTIFY_SOCKET=str(tmp_path / "notify.sock"),
                               **env)
        self.process = subprocess.Popen([*program, "run"], env=environment, cwd=tmp_path,
                                        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.tmp_path = tmp_path

    def next_notification(self) -> str:
        return self.notify.recv(4096).decode()

    def wait_for(self, prefix: str) -> tuple[str, list[str]]:
        seen = []
        while True:
            message = self.next_notification()
            seen.append(message)
            if message.startswith(prefix):
                return message, seen

    def post(self, path: str, body: dict | None = None, headers: dict | None = None, timeout: float = 10) -> dict:
        request = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", method="POST",
                                         data=json.dumps(body or {}).encode(), headers=headers or {})
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.load(response)

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        self.process.communicate(timeout=10)
        self.notify.close()


@contextlib.contextmanager
def daemon(tmp_path, llm, program: tuple[str, ...] = (sys.executable, "-m", "edge"), **env: str):  # type: ignore[no-untyped-def]
    d = Daemon(tmp_path, llm, program, **env)
    try:
        yield d
    finally:
        d.close()


def test_ready_watchdog_pairing_webhook_and_a_clean_stop(tmp_path, llm: ScriptedLLM):
    llm.script("Hello from the daemon.")
    with daemon(tmp_path, llm, WATCHDOG_USEC="1000000") as d:
        ready, _ = d.wait_for("READY=1")
        assert "STATUS=watchdog up, agent up, memory up, scheduler up, heartbeat up, gateway up" in ready
        code = d.process.stdout.readline().strip()
        assert re.fullmatch(r"\d{8}", code)  # the pairing code, alone on its line
        d.wait_for("WATCHDOG=1")
        d.wait_for("WATCHDOG=1")
        token = d.post("/pair", headers={"X-Pairing-Code": code})["token"]
        answer = d.post("/webhook", {"message": "hi"}, {"Authorization": f"Bearer {token}"})
        assert answer == {"response": "Hello from the daemon.", "model": "test-model"}
        stopped_at = time.monotonic()
        d.process.send_signal(signal.SIGTERM)
        d.wait_for("STOPPING=1")
        d.process.wait(timeout=5)
        elapsed = time.monotonic() - stopped_at
        _, err = d.process.communicate()
    assert d.process.returncode == 0 and elapsed < 5, err
    assert [r[0] for r in llm.requests if r[0] == "/api/chat:load"]  # the model was preloaded after READY


def test_sigterm_during_a_turn_saves_it_and_exits_quickly(tmp_path, llm: ScriptedLLM):
    llm.script(Step(text="a very slow answer " * 50, delay=0.05))
    with daemon(tmp_path, llm, EDGE_GATEWAY__PAIRING="false") as d:
        d.wait_for("READY=1")
        caller = threading.Thread(target=_quiet_post, args=(d,), daemon=True)
        caller.start()
        deadline = time.monotonic() + 10
        while llm.chunks_sent < 4 and time.monotonic() < deadline:  # part of the answer has streamed
            time.sleep(0.02)
        d.process.send_signal(signal.SIGTERM)
        d.process.wait(timeout=5)
    con = apsw.Connection(str(tmp_path / "state" / "edge.db"))
    rows = con.execute("SELECT role, content FROM messages ORDER BY id").fetchall()
    assert rows[0] == ("user", "tell me slowly") and rows[1][0] == "assistant"
    assert rows[1][1].startswith("a very slow answer") and rows[1][1].endswith("[stopped]")


def _quiet_post(d: Daemon) -> None:
    with contextlib.suppress(Exception):
        d.post("/webhook", {"message": "tell me slowly"}, timeout=30)


def test_an_open_gateway_off_loopback_is_refused(tmp_path):
    env = edge_env(tmp_path, None, EDGE_GATEWAY__HOST="0.0.0.0", EDGE_GATEWAY__PAIRING="false")
    result = subprocess.run([sys.executable, "-m", "edge", "run"], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 2 and "[gateway] pairing = False: expected true when [gateway] host is '0.0.0.0'" in result.stderr


def test_pair_prints_a_code_that_the_daemon_accepts(tmp_path, llm: ScriptedLLM):
    with daemon(tmp_path, llm) as d:
        d.wait_for("READY=1")
        env = edge_env(tmp_path, llm, EDGE_GATEWAY__PORT=str(d.port))
        paired = subprocess.run([sys.executable, "-m", "edge", "pair"], env=env, cwd=tmp_path, capture_output=True,
                                text=True, timeout=30)
        code = paired.stdout.strip()
        assert re.fullmatch(r"\d{8}", code), paired.stdout
        assert "token" in d.post("/pair", headers={"X-Pairing-Code": code})
        status = subprocess.run([sys.executable, "-m", "edge", "status"], env=env, cwd=tmp_path, capture_output=True,
                                text=True, timeout=30)
    assert status.returncode == 0 and re.search(r"gateway\s+up", status.stdout)


def test_status_when_not_running(tmp_path):
    env = edge_env(tmp_path, None, EDGE_GATEWAY__PORT=str(free_port()))
    result = subprocess.run([sys.executable, "-m", "edge", "status"], env=env, cwd=tmp_path, capture_output=True,
                            text=True, timeout=30)
    assert result.returncode == 1 and "edge is not running" in result.stderr


def test_an_unplugged_serial_device_shows_in_health(tmp_path, llm: ScriptedLLM):
    config = tmp_path / "edge.toml"
    config.write_text(f'[[serial.ports]]\nname = "attic"\nurl = "{tmp_path / "ttyATTIC"}"\n')
    with daemon(tmp_path, llm, EDGE_CONFIG=str(config), EDGE_GATEWAY__PAIRING="false") as d:
        ready, _ = d.wait_for("READY=1")
        try:
            urllib.request.urlopen(f"http://127.0.0.1:{d.port}/health", timeout=5)
            raise AssertionError("expected 503 while a device is missing")
        except urllib.error.HTTPError as exc:
            status, body = exc.code, json.load(exc)
    assert "serial:attic failed" in ready
    assert status == 503 and body["status"] == "degraded" and body["components"]["serial:attic"]["status"] == "failed"
