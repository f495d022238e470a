"""Tools that read the device itself: the clock and the board's health."""

from __future__ import annotations

import asyncio
import os
import shutil
from datetime import datetime
from pathlib import Path

from edge.errors import ToolError
from edge.hardware.sensors import throttling
from edge.tools.base import Tool, tool


def system_tools(disk_path: Path, proc: Path = Path("/proc"), sys: Path = Path("/sys")) -> list[Tool]:
    async def time_now(timezone: str = "") -> str:
        """Tell the current date, time and weekday.

        Args:
            timezone: an IANA zone such as "Europe/Paris"; empty for the device's own zone.
        """
        from zoneinfo import ZoneInfo, ZoneInfoNotFoundError  # only when asked: it costs RAM at idle

        try:
            zone = ZoneInfo(timezone) if timezone else None
        except (ZoneInfoNotFoundError, ValueError):
            raise ToolError(f"unknown time zone {timezone!r}; use an IANA name like 'Europe/Berlin'") from None
        now = datetime.now(zone).astimezone(zone)
        return now.strftime("%A %Y-%m-%d %H:%M:%S %Z (UTC%z)")

    async def system_status() -> str:
        """Report the device's health: CPU temperature, load, memory, disk and uptime."""
        return await asyncio.to_thread(_status, disk_path, proc, sys)

    return [tool(time_now, core=True), tool(system_status, core=True)]


def _status(disk_path: Path, proc: Path, sys: Path) -> str:
    lines = []
    temperature = _cpu_temperature(sys)
    if temperature is not None:
        lines.append(f"CPU temperature: {temperature:.1f} °C")
    power = throttling()
    if power is not None:
        lines.append(f"Power and heat: {power}")
    load1, load5, _ = os.getloadavg()
    lines.append(f"Load: {load1:.2f} (1 min), {load5:.2f} (5 min) on {os.cpu_count()} cores")
    meminfo = _meminfo(proc)
    if meminfo:
        total, available = meminfo.get("MemTotal", 0), meminfo.get("MemAvailable", 0)
        lines.append(f"Memory: {available // 1024} MB free of {total // 1024} MB")
    usage = shutil.disk_usage(disk_path if disk_path.exists() else "/")
    lines.append(f"Disk: {usage.free / 1e9:.1f} GB free of {usage.total / 1e9:.1f} GB")
    uptime = _uptime(proc)
    if uptime is not None:
        lines.append(f"Uptime: {_duration(uptime)}")
    return "\n".join(lines)


def _cpu_temperature(sys: Path) -> float | None:
    """The hottest thermal zone: on a Pi that is the SoC; on a laptop, whatever the board exposes."""
    readings = []
    for zone in sys.glob("class/thermal/thermal_zone*/temp"):
        try:
            readings.append(int(zone.read_text().strip()) / 1000)
        except (OSError, ValueError):
            continue
    return max(readings) if readings else None


def _meminfo(proc: Path) -> dict[str, int]:
    try:
        text = (proc / "meminfo").read_text()
    except OSError:
        return {}
    values = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            values[name] = int(parts[0])
    return values


def _uptime(proc: Path) -> float | None:
    try:
        return float((proc / "uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def _duration(seconds: float) -> str:
    days, rest = divmod(int(seconds), 86400)
    hours, rest = divmod(rest, 3600)
    return f"{days} d {hours} h {rest // 60} min" if days else f"{hours} h {rest // 60} min"
