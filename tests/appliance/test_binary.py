"""The standalone build (`make build`, then `make smoke`): the same checks as the daemon's, on the binary.

Skipped unless the build exists: compiling takes minutes, so it is not part of every `make test`.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.conftest import edge_env
from tests.fakes.llm_server import ScriptedLLM
from tests.test_daemon import daemon

BINARY = Path(os.environ.get("EDGE_BINARY", Path(__file__).resolve().parents[2] / "build/dist/edge/edge"))
pytestmark = pytest.mark.skipif(not BINARY.is_file(), reason=f"no standalone build at {BINARY} (make build)")


def test_version_and_doctor(tmp_path, llm: ScriptedLLM):
    version = subprocess.run([str(BINARY), "--version"], capture_output=True, text=True, timeout=30)
    assert version.returncode == 0 and re.fullmatch(r"edge \d+\.\d+\.\d+\n", version.stdout)
    doctor = subprocess.run([str(BINARY), "doctor"], capture_output=True, text=True, timeout=60,
                            env=edge_env(tmp_path, llm, EDGE_MEMORY__EMBEDDING_MODEL="embed-model",
                                         EDGE_MEMORY__DIMS="64"), cwd=tmp_path)
    assert "ok  provider" in doctor.stdout and "hybrid recall" in doctor.stdout, doctor.stdout + doctor.stderr


def test_ready_webhook_and_a_clean_stop(tmp_path, llm: ScriptedLLM):
    llm.script("Hello from the binary.")
    with daemon(tmp_path, llm, (str(BINARY),), EDGE_GATEWAY__PAIRING="false") as d:
        d.wait_for("READY=1")
        answer = d.post("/webhook", {"message": "hi"})
        d.process.send_signal(signal.SIGTERM)
        d.process.wait(timeout=5)
    assert answer == {"response": "Hello from the binary.", "model": "test-model"}
    assert d.process.returncode == 0
