"""The sensors tool: 1-Wire thermometers (DS18B20) read from sysfs."""

from __future__ import annotations

import asyncio
from pathlib import Path

from edge.hardware.sensors import ds18b20
from edge.tools.base import Tool, tool


def sensor_tools(onewire_root: Path) -> list[Tool]:
    async def temperature_sensors() -> str:
        """Read every DS18B20 temperature sensor wired to the device."""
        readings = await asyncio.to_thread(ds18b20, onewire_root)
        if not readings:
            return f"No DS18B20 sensors found under {onewire_root} (is the 1-Wire interface enabled?)."
        return "\n".join(f"{sensor}: {value:.1f} °C" if value is not None else f"{sensor}: no valid reading (check the wiring)"
                         for sensor, value in readings)

    return [tool(temperature_sensors, core=True)]
