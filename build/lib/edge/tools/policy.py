"""The policy gate every tool call passes: autonomy level, risk, and the user's approval.

readonly    only read-only tools are offered or run
supervised  low-risk tools run; medium and high risk ask the user (yes / no / always for this session)
full        everything runs (each tool still enforces its own limits, e.g. the shell allowlist)
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from edge.config import SecurityConfig
from edge.errors import PolicyDenied
from edge.tools.base import Risk, Tool

Answer = Literal["yes", "no", "always"]


@dataclass(frozen=True)
class ApprovalRequest:
    session_id: str
    tool: str
    arguments: dict[str, Any]
    risk: Risk

    def describe(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.arguments.items())
        return f"{self.tool}({args})"


Approver = Callable[[ApprovalRequest], Awaitable[Answer]]


class PolicyGate:
    def __init__(self, config: SecurityConfig) -> None:
        self.config = config
        self._always: set[tuple[str, str]] = set()  # (session, tool) the user said "always" to

    def offers(self, tool: Tool) -> bool:
        return tool.read_only or self.config.autonomy != "readonly"

    async def authorize(self, tool: Tool, arguments: dict[str, Any], session_id: str, approver: Approver | None) -> str:
        """Return how the call was allowed ("allowed" or "approved"); raise PolicyDenied otherwise."""
        autonomy = self.config.autonomy
        if not self.offers(tool):
            raise PolicyDenied(f"{tool.name} changes things and edge is in read-only mode ([security] autonomy)")
        risk = tool.risk_for(arguments)
        if autonomy == "full" or risk == "low" or (session_id, tool.name) in self._always:
            return "allowed"
        if approver is None:
            raise PolicyDenied(
                f"{tool.name} needs the user's approval and this channel cannot ask; "
                "use `edge chat`, or set [security] autonomy = \"full\""
            )
        request = ApprovalRequest(session_id, tool.name, arguments, risk)
        try:
            answer = await asyncio.wait_for(approver(request), self.config.approval_timeout_s)
        except TimeoutError:
            raise PolicyDenied(f"the user did not approve {tool.name} in time") from None
        if answer == "always":
            self._always.add((session_id, tool.name))
        if answer in ("yes", "always"):
            return "approved"
        raise PolicyDenied(f"the user declined {tool.name}")
