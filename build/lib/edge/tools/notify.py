"""The notify tool: the agent sends the owner a message on a channel (Telegram), outside any conversation."""

from __future__ import annotations

from edge.bus import Bus
from edge.errors import ToolError
from edge.tools.base import Tool, tool


def notify_tools(bus: Bus, channel: str) -> list[Tool]:
    async def notify(message: str) -> str:
        """Send a short message to the owner's phone, e.g. an alert or a reminder.

        Args:
            message: the text to send.
        """
        if not message.strip():
            raise ToolError("the message is empty")
        if not await bus.notify(channel, message):
            raise ToolError(f"the {channel} channel is not running, so nothing was sent")
        return f"Sent to the owner on {channel}."

    return [tool(notify, risk="low", read_only=False, core=True)]
