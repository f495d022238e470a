"""systemd/edge.service: valid for systemd-analyze, and hardened (exposure ≤ 2.0) while GPIO and serial stay reachable."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

UNIT = Path(__file__).resolve().parents[2] / "systemd" / "edge.service"
analyze = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(analyze is None, reason="systemd-analyze is not installed")


def unit_with_a_real_binary(tmp_path: Path) -> Path:
    """The unit as installed, except that ExecStart names a program that exists on this machine."""
    copy = tmp_path / "edge.service"
    copy.write_text(UNIT.read_text().replace("ExecStart=/opt/edge/edge run", "ExecStart=/bin/true run"))
    return copy


@needs_systemd
def test_the_unit_verifies_cleanly(tmp_path):
    result = subprocess.run([analyze, "verify", str(unit_with_a_real_binary(tmp_path))], capture_output=True,
                            text=True, timeout=60)
    problems = [line for line in (result.stdout + result.stderr).splitlines() if "edge.service" in line]
    assert result.returncode == 0 and problems == [], problems


@needs_systemd
def test_the_unit_is_hardened(tmp_path):
    result = subprocess.run([analyze, "security", "--offline=true", str(unit_with_a_real_binary(tmp_path))],
                            capture_output=True, text=True, timeout=60)
    score = float(re.search(r"Overall exposure level for edge\.service: ([\d.]+)", result.stdout).group(1))
    assert score <= 2.0, result.stdout


def test_the_unit_keeps_what_edge_needs():
    text = UNIT.read_text()
    settings = {line.split("=", 1)[0] for line in text.splitlines() if "=" in line and not line.startswith("#")}
    assert {"Type", "WatchdogSec", "Restart", "MemoryHigh", "MemoryMax", "StateDirectory", "ConfigurationDirectory",
            "LoadCredential", "SupplementaryGroups", "NoNewPrivileges", "ProtectSystem", "DeviceAllow",
            "RestrictAddressFamilies", "SystemCallFilter"} <= settings
    assert "Type=notify" in text and "DeviceAllow=char-gpiochip rw" in text and "SupplementaryGroups=gpio dialout" in text
    assert "LG_WD=/var/lib/edge" in text and "MALLOC_ARENA_MAX=2" in text
