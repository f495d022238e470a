"""Serial tools: send to, read from, and query the configured serial devices, by name."""

from __future__ import annotations

from typing import Any

from edge.errors import ToolError
from edge.hardware.serial import SerialPort
from edge.tools.base import Risk, Tool, tool

MAX_WAIT_S = 10.0


def serial_tools(ports: dict[str, SerialPort]) -> list[Tool]:
    def port(name: str) -> SerialPort:
        if name not in ports:
            raise ToolError(f"no serial port named {name!r}; the ports are: {', '.join(ports) or 'none configured'}")
        return ports[name]

    async def serial_query(port_name: str, command: str, wait_s: float = 2.0) -> str:
        """Send a command line to a serial device and return the line it answers with.

        Args:
            port_name: the port's name from the configuration, e.g. "greenhouse".
            command: the line to send, e.g. "TEMP?".
            wait_s: how long to wait for the answer, at most 10 seconds.
        """
        return await port(port_name).query(command, min(max(wait_s, 0.1), MAX_WAIT_S))

    async def serial_send(port_name: str, command: str) -> str:
        """Send a line to a serial device without waiting for an answer.

        Args:
            port_name: the port's name from the configuration.
            command: the line to send.
        """
        sent = await port(port_name).send(command)
        return f"Sent {sent} bytes to {port_name}."

    async def serial_read(port_name: str, wait_s: float = 1.0) -> str:
        """Read the lines a serial device sent since the last read.

        Args:
            port_name: the port's name from the configuration.
            wait_s: how long to wait when nothing has arrived yet, at most 10 seconds.
        """
        lines = await port(port_name).read(min(max(wait_s, 0.0), MAX_WAIT_S))
        return "\n".join(lines) if lines else f"{port_name} sent nothing."

    def risk_of(arguments: dict[str, Any]) -> Risk:
        found = ports.get(str(arguments.get("port_name", "")))
        return "high" if found is None or found.config.write_needs_approval else "low"

    return [
        tool(serial_query, read_only=False, core=True, risk_of=risk_of, timeout_s=MAX_WAIT_S + 5),
        tool(serial_send, read_only=False, risk_of=risk_of),
        tool(serial_read, timeout_s=MAX_WAIT_S + 5),
    ]
