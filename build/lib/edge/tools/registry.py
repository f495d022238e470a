"""The registry: which tools the model is offered, and the one place every call runs.

execute() = check arguments → policy gate → run under a timeout → cap and scrub the output → audit row.
Nothing here raises into the agent loop: every outcome is a ToolResult the model can read.
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any, Literal

import orjson

from edge.config import ToolsConfig
from edge.errors import EdgeError, PolicyDenied
from edge.memory.store import AuditRecord, Store
from edge.platform.logging import scrub
from edge.tools.base import Tool, check_arguments
from edge.tools.policy import Approver, PolicyGate

log = logging.getLogger(__name__)
Outcome = Literal["ok", "error", "invalid", "unknown", "denied"]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: Any  # what the model sent: normally a dict, but it may be anything

    def fingerprint(self) -> str:
        try:
            return self.name + orjson.dumps(self.arguments, option=orjson.OPT_SORT_KEYS).decode()
        except TypeError:
            return self.name + repr(self.arguments)


@dataclass(frozen=True)
class ToolResult:
    outcome: Outcome
    content: str

    @property
    def ok(self) -> bool:
        return self.outcome == "ok"


class Registry:
    def __init__(self, tools: list[Tool], gate: PolicyGate, store: Store | None, config: ToolsConfig) -> None:
        self._tools = {t.name: t for t in sorted(tools, key=lambda t: t.name)}
        self.gate = gate
        self.store = store
        self.config = config
        self._spec_cache: dict[bool, list[dict[str, Any]]] = {}

    def offered(self, small: bool) -> list[Tool]:
        return [t for t in self._tools.values() if self.gate.offers(t) and (t.core or not small)]

    def specs(self, small: bool) -> list[dict[str, Any]]:
        """Built once and reused: a byte-identical tool list keeps the model server's prompt cache warm."""
        if small not in self._spec_cache:
            self._spec_cache[small] = [t.spec(small) for t in self.offered(small)]
        return self._spec_cache[small]

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    async def execute(self, call: ToolCall, session_id: str, approver: Approver | None, small: bool) -> ToolResult:
        started = time.monotonic()
        tool = self._tools.get(call.name)
        decision = "invalid"
        if tool is None or tool not in self.offered(small):
            names = ", ".join(t.name for t in self.offered(small)) or "none"
            result = ToolResult("unknown", f"Error: there is no tool named {call.name!r}. Available tools: {names}.")
        else:
            arguments, problems = check_arguments(tool, call.arguments)
            if problems:
                result = ToolResult("invalid", f"Error: invalid arguments for {tool.name}: " + "; ".join(problems) + ".")
            else:
                try:
                    decision = await self.gate.authorize(tool, arguments, session_id, approver)
                    result = await self._run(tool, arguments)
                except PolicyDenied as exc:
                    decision = "denied"
                    result = ToolResult("denied", f"Not done: {exc}.")
        result = ToolResult(result.outcome, self._cap(scrub(result.content)))
        await self._audit(call, session_id, decision, result, (time.monotonic() - started) * 1000)
        return result

    async def _run(self, tool: Tool, arguments: dict[str, Any]) -> ToolResult:
        timeout = tool.timeout_s or self.config.timeout_s
        try:
            output = await asyncio.wait_for(tool.function(**arguments), timeout)
        except TimeoutError:
            return ToolResult("error", f"Error: {tool.name} did not finish within {timeout:g} s and was stopped.")
        except EdgeError as exc:
            return ToolResult("error", f"Error: {exc}")
        except Exception as exc:  # a bug in a tool must not end the turn; the log keeps the traceback
            log.exception("tool %s failed", tool.name)
            return ToolResult("error", f"Error: {tool.name} failed unexpectedly ({type(exc).__name__}: {exc}).")
        return ToolResult("ok", output)

    def _cap(self, text: str) -> str:
        limit = self.config.max_result_chars
        if len(text) <= limit:
            return text
        return text[:limit] + f"\n… [cut: {len(text) - limit} more characters]"

    async def _audit(self, call: ToolCall, session_id: str, decision: str, result: ToolResult, ms: float) -> None:
        if self.store is None:
            return
        try:
            arguments = orjson.dumps(call.arguments, default=str).decode()
        except TypeError:
            arguments = repr(call.arguments)
        record = AuditRecord(session_id, call.name, scrub(arguments)[:2000], decision, result.ok, ms, result.content[:500])
        try:
            await self.store.audit(record)
        except EdgeError as exc:  # a full disk must not hide the tool's answer from the user
            log.error("could not write the audit row for %s: %s", call.name, exc)
