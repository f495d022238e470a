"""GPIO tools: list, read, switch and pulse the configured devices by name (raw pins only if allowlisted)."""

from __future__ import annotations

import asyncio
from typing import Any

from edge.errors import ToolError
from edge.hardware.gpio import GpioBoard
from edge.tools.base import Risk, Tool, tool

MAX_PULSE_S = 60.0


def gpio_tools(board: GpioBoard) -> list[Tool]:
    async def gpio_list() -> str:
        """List the GPIO devices (lights, relays, buttons, sensors) with their state now."""
        lines = [board.describe(name) + (f": {device.description}" if device.description else "")
                 for name, (device, _) in board.devices.items()]
        note = "\n(pins are simulated on this machine)" if board.simulated else ""
        return ("\n".join(lines) or "No GPIO devices are configured.") + note

    async def gpio_read(name: str) -> str:
        """Read the state of a GPIO device.

        Args:
            name: the device's name, e.g. "porch light".
        """
        return board.describe(name)

    async def gpio_write(name: str, value: str) -> str:
        """Switch a GPIO output: on, off, or a level from 0 to 1 for a dimmable (PWM) one.

        Args:
            name: the device's name, e.g. "porch light".
            value: "on", "off", or a level such as 0.5.
        """
        return board.write(name, value)

    async def gpio_pulse(name: str, seconds: float = 1.0) -> str:
        """Switch a GPIO output on for some seconds, then off again (a door buzzer, a pump burst).

        Args:
            name: the device's name.
            seconds: how long to stay on, at most 60.
        """
        if not 0 < seconds <= MAX_PULSE_S:
            raise ToolError(f"seconds must be more than 0 and at most {MAX_PULSE_S:g}")
        board.write(name, "on")
        try:
            await asyncio.sleep(seconds)
        finally:
            state = board.write(name, "off")  # even when the turn is stopped mid-pulse
        return f"Pulsed for {seconds:g} s; now {state.split(' is ', 1)[1]}"

    def risk_of(arguments: dict[str, Any]) -> Risk:
        try:
            device, _ = board.device(str(arguments.get("name", "")))
        except ToolError:
            return "low"  # an unknown name fails anyway, with the list of names
        return "high" if device.needs_approval else "low"

    return [
        tool(gpio_list, core=True),
        tool(gpio_read, core=True),
        tool(gpio_write, read_only=False, core=True, risk_of=risk_of),
        tool(gpio_pulse, read_only=False, risk_of=risk_of, timeout_s=MAX_PULSE_S + 5),
    ]
