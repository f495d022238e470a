"""Sensors read from the filesystem: DS18B20 1-Wire thermometers and the Pi's throttling state."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

_THROTTLE_BITS = {0: "under-voltage now", 1: "CPU frequency capped now", 2: "throttled now", 3: "soft temperature limit now",
                  16: "under-voltage has occurred", 17: "frequency capping has occurred", 18: "throttling has occurred",
                  19: "soft temperature limit has occurred"}


def ds18b20(root: Path) -> list[tuple[str, float | None]]:
    """(sensor id, °C or None when the reading failed its CRC) for each DS18B20 under the 1-Wire root."""
    readings = []
    for device in sorted(root.glob("28-*")):
        readings.append((device.name, _read_one(device)))
    return readings


def _read_one(device: Path) -> float | None:
    try:
        text = (device / "w1_slave").read_text()
    except OSError:
        return None
    lines = text.strip().splitlines()
    if len(lines) < 2 or not lines[0].endswith("YES") or "t=" not in lines[1]:
        return None  # a CRC failure: a loose wire or a long cable
    return int(lines[1].split("t=")[1]) / 1000


def throttling() -> str | None:
    """What the Pi firmware says about power and heat, or None where there is no `vcgencmd`."""
    if shutil.which("vcgencmd") is None:
        return None
    try:
        out = subprocess.run(["vcgencmd", "get_throttled"], capture_output=True, text=True, timeout=2).stdout
        value = int(out.strip().split("=")[1], 16)
    except (OSError, subprocess.SubprocessError, IndexError, ValueError):
        return None
    flags = [text for bit, text in _THROTTLE_BITS.items() if value & (1 << bit)]
    return ", ".join(flags) if flags else "no throttling, power is fine"
