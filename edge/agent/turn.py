"""One turn: a user message in, tool rounds through the registry, an answer out — never a dead end.

Counter-measures for how small models fail (notes/ollama.md): tool calls written as text are parsed;
invalid arguments get one repair message; identical calls run once; a repeated or failing call stops the
tool rounds early; at the cap (or any stop) one final request without tools produces the answer.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from pathlib import Path
from typing import Any

from edge.agent.compaction import Compactor
from edge.agent.context import SystemPrompt, context_ceiling, estimate_tokens, is_small_model, message_tokens
from edge.agent.events import Delta, Notice, Sink, ToolActivity, TurnResult
from edge.agent.parse import extract_tool_calls
from edge.agent.request import Reply, Request, fixed_tokens, history_room, stream_reply
from edge.config import AgentConfig, MemoryConfig
from edge.errors import EdgeError, ToolsUnsupported
from edge.memory.memories import Memories
from edge.memory.store import Store, Usage
from edge.providers.base import Provider
from edge.tools.policy import Approver
from edge.tools.registry import Registry, ToolCall, ToolResult

log = logging.getLogger(__name__)
EMPTY_ANSWER = "(The model gave an empty answer. Try again, or try a larger model.)"
_NO_MORE_TOOLS = "[edge] No more tools in this turn: {reason}. Answer the user now with what you have."
_EMPTY_NUDGE = "[edge] Your last reply was empty. Answer the user's message."
_REMEMBER = re.compile(r"^\s*(?:please\s+)?remember(?:\s+that)?[\s:,]+(?P<fact>.{3,500}?)\s*$", re.I | re.S)


def _remember_request(text: str) -> str | None:
    """The fact in "remember that my wifi password is in the drawer", or None for anything else."""
    match = _REMEMBER.match(text)
    if not match or text.rstrip().endswith("?"):  # "remember when ...?" is a question, not a request
        return None
    return match.group("fact")


class Agent:
    def __init__(self, provider: Provider, registry: Registry, store: Store, config: AgentConfig, workspace: Path,
                 memories: Memories | None = None, memory_config: MemoryConfig | None = None) -> None:
        self.provider, self.registry, self.store, self.config = provider, registry, store, config
        self.prompt = SystemPrompt(workspace, config.workspace_budget_tokens)
        self.memories, self.memory_config = memories, memory_config or MemoryConfig()
        self.compactor = Compactor(provider, store, memories)
        self._compactions: dict[str, asyncio.Task[None]] = {}  # session → compaction running after its last turn

    async def turn(self, session_id: str, text: str, sink: Sink, approver: Approver | None = None) -> TurnResult:
        turn_id = uuid.uuid4().hex[:12]
        await self.settle(session_id)  # a turn never reads history that is being compacted
        await self.store.append(session_id, turn_id, [{"role": "user", "content": text}])  # accepted = kept
        if self.memories is not None and (fact := _remember_request(text)):
            return await self._remember(session_id, turn_id, fact, sink)
        turn = _Turn(self, session_id, sink, approver)
        started = time.monotonic()
        try:
            result = await turn.run()
        except EdgeError as exc:  # the model server failed: say so plainly, keep the daemon up
            log.warning("turn failed: %s", exc)
            result = TurnResult(text=f"Sorry, I could not get an answer: {exc}", error=str(exc))
            await sink(Delta(result.text))
        except asyncio.CancelledError:
            turn.new.append({"role": "assistant", "content": turn.partial + " [stopped]"})
            await self._save(session_id, turn_id, turn, started)
            raise
        turn.new.append({"role": "assistant", "content": result.text})
        try:
            await self._save(session_id, turn_id, turn, started)
        except EdgeError as exc:  # the user already has the answer; tell them it was not kept
            log.error("could not save the turn: %s", exc)
            await turn.notice(f"this exchange was not saved: {exc}")
        result.notices = turn.notices
        result.tool_calls, result.requests = turn.tool_calls, turn.requests
        result.prompt_tokens, result.completion_tokens = turn.prompt_tokens, turn.completion_tokens
        if not result.error:
            self._compact_if_long(session_id, turn)
        return result

    def _compact_if_long(self, session_id: str, turn: _Turn) -> None:
        """Past the session's token budget, compact in the background: the answer is already out."""
        fixed = fixed_tokens(turn.system, turn.specs if turn.native else [])
        room = history_room(turn.ceiling, self.config.reply_tokens, turn.small, fixed)
        budget = self.memory_config.history_budget_tokens or room * 3 // 4  # before fit_history must drop turns
        if sum(message_tokens(m) for m in turn.history + turn.new) <= budget:
            return
        task = asyncio.create_task(self._compact(session_id, room, budget // 2, turn), name=f"compact:{session_id}")
        self._compactions[session_id] = task
        task.add_done_callback(lambda _: self._compactions.pop(session_id, None))

    async def _compact(self, session_id: str, room: int, keep: int, turn: _Turn) -> None:
        try:
            await self.compactor.compact(session_id, room, keep, turn.ceiling, self.config.reply_tokens, turn.small)
        except EdgeError as exc:  # nothing was marked compacted: the next turn tries again
            log.warning("compaction failed: %s", exc)

    async def settle(self, session_id: str | None = None) -> None:
        """Wait for a session's compaction (or every one) to finish."""
        if session_id is None:
            tasks = list(self._compactions.values())
        else:
            tasks = [task] if (task := self._compactions.get(session_id)) else []
        await asyncio.gather(*tasks, return_exceptions=True)

    async def close(self) -> None:
        """At shutdown, compaction is abandoned whole: it writes in one transaction at its very end."""
        for task in self._compactions.values():
            task.cancel()
        await self.settle()

    async def _remember(self, session_id: str, turn_id: str, fact: str, sink: Sink) -> TurnResult:
        """ "Remember that ..." needs no model: store it and say so."""
        assert self.memories is not None
        memory_id = await self.memories.remember(fact, "core", session_id=session_id)
        text = f"Noted. I will remember that {fact.rstrip('.')}. (memory #{memory_id})"
        await sink(Delta(text))
        await self.store.append(session_id, turn_id, [{"role": "assistant", "content": text}])
        return TurnResult(text=text)

    async def recalled_note(self, text: str) -> str:
        """Relevant memories for this message, within the memory budget ("" when none)."""
        if self.memories is None:
            return ""
        try:
            found = await self.memories.recall(text)
        except EdgeError as exc:
            log.warning("memory recall failed: %s", exc)
            return ""
        lines, used = [], 0
        for memory in found:
            used += estimate_tokens(memory.content) + 2
            if used > self.memory_config.inject_budget_tokens:
                break
            lines.append(f"- {memory.content}")
        return "[What you remember that may help:\n" + "\n".join(lines) + "]\n\n" if lines else ""

    async def _save(self, session_id: str, turn_id: str, turn: _Turn, started: float) -> None:
        await self.store.append(session_id, turn_id, turn.new)
        usage = Usage(session_id, self.provider.config.model, turn.prompt_tokens, turn.completion_tokens,
                      turn.requests, (time.monotonic() - started) * 1000)
        await self.store.record_usage(usage)


class _Turn:
    def __init__(self, agent: Agent, session_id: str, sink: Sink, approver: Approver | None) -> None:
        self.agent, self.session_id, self.sink, self.approver = agent, session_id, sink, approver
        self.new: list[dict[str, Any]] = []  # messages this turn adds after the user's
        self.partial = ""  # text streamed so far, kept if the turn is cancelled
        self.notices: list[str] = []
        self.seen: dict[str, ToolResult] = {}  # call fingerprint → result: identical calls run once
        self.repaired = False  # the model has had its one message about a wrong call
        self.tool_calls = self.requests = self.prompt_tokens = self.completion_tokens = 0
        # Set by _prepare() from the model's capabilities:
        self.small = self.native = False
        self.ceiling = 0
        self.specs: list[dict[str, Any]] = []
        self.system = ""
        self.history: list[dict[str, Any]] = []

    async def run(self) -> TurnResult:
        await self._prepare()
        asked_again = False
        nudge: str | None = None
        stop_reason = f"the limit of {self.agent.config.max_tool_iterations} tool rounds was reached"
        for _ in range(self.agent.config.max_tool_iterations):
            reply = await self._ask(with_tools=True, nudge=nudge)
            nudge = None
            calls = reply.calls
            if not calls and self.specs:
                calls, reply.text = extract_tool_calls(reply.text, self.agent.registry.get)
            if not calls:
                if reply.text.strip() or reply.done.reason == "length" or asked_again:
                    return await self._finish(reply, stop_reason)
                asked_again, nudge = True, _EMPTY_NUDGE  # an empty answer (typical of thinking models): ask once more
                continue
            self.new.append({"role": "assistant", "content": reply.text,
                             "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in calls]})
            problem = await self._run_calls(calls)
            if problem:
                stop_reason = problem
                break
        final = await self._ask(with_tools=False, nudge=_NO_MORE_TOOLS.format(reason=stop_reason))
        if self.specs:  # a model told "no more tools" may still write one: never show it raw
            _, final.text = extract_tool_calls(final.text, self.agent.registry.get)
        return await self._finish(final, stop_reason)

    async def _run_calls(self, calls: list[ToolCall]) -> str | None:
        """Run one round of calls, answering each; return why the tool rounds must stop, if they must."""
        problem = None
        for call in calls:
            result = self.seen.get(call.fingerprint())
            repeat = result is not None
            if result is None:
                await self.sink(ToolActivity(call.name, call.arguments))
                result = self.seen[call.fingerprint()] = await self.agent.registry.execute(
                    call, self.session_id, self.approver, self.small)
                self.tool_calls += 1
                await self.sink(ToolActivity(call.name, call.arguments, result))
            content = f"(Same call already made in this turn; its result:)\n{result.content}" if repeat else result.content
            self.new.append({"role": "tool", "tool_call_id": call.id, "name": call.name, "content": content})
            if repeat:
                problem = problem or f"{call.name} was asked for again with the same arguments"
            elif result.outcome in ("invalid", "unknown"):
                problem = problem or (f"the tool call was still wrong ({result.content})" if self.repaired else None)
                self.repaired = True
        return problem

    async def _prepare(self) -> None:
        info = await self.agent.provider.info()
        self.small = is_small_model(self.agent.config, info)
        self.ceiling = context_ceiling(self.agent.provider.config, info)
        self.specs = self.agent.registry.specs(self.small)
        self.native = info.native_tools
        self.system = self.agent.prompt.build(self.small, [] if self.native else self.specs)
        # The history ends with this turn's user message. The summary changes only when the session is
        # compacted, so the prompt's prefix stays cacheable.
        summary, self.history = await self.agent.store.conversation(self.session_id)
        if summary:
            self.system += f"\n\n## Earlier in this conversation\n{summary}"
        note = await self.agent.recalled_note(self.history[-1]["content"])
        if note:  # on this turn's message only, in the request only: the prefix stays byte-stable
            self.history[-1] = {**self.history[-1], "content": note + self.history[-1]["content"]}

    async def _ask(self, with_tools: bool, nudge: str | None = None) -> Reply:
        messages = self.history + self.new + ([{"role": "user", "content": nudge}] if nudge else [])
        tools = self.specs if with_tools and self.native else []
        request = Request(self.system, messages, tools, self.ceiling, self.agent.config.reply_tokens, self.small)
        try:
            reply = await stream_reply(self.agent.provider, request, self._stream, text_tools=not self.native)
        except ToolsUnsupported:
            log.warning("%s rejects native tools; describing them in the prompt instead", self.agent.provider.config.model)
            self.agent.provider.forget_tools()
            await self._prepare()
            return await self._ask(with_tools, nudge)
        self.requests += 1
        self.prompt_tokens += reply.done.prompt_tokens or 0
        self.completion_tokens += reply.done.completion_tokens or 0
        if reply.truncated_to:
            await self.notice(f"the model server read only {reply.truncated_to} prompt tokens of what was sent; "
                              "it is cutting the context (raise its context size, or [provider] num_ctx)")
        return reply

    async def _stream(self, event: Delta) -> None:
        self.partial += event.text
        await self.sink(event)

    async def _finish(self, reply: Reply, stop_reason: str) -> TurnResult:
        text = reply.text.strip()
        if not text and reply.done.reason != "length":
            text = EMPTY_ANSWER if not self.tool_calls else f"I could not complete that: {stop_reason}."
        if not reply.streamed and text:
            await self._stream(Delta(text))
        if reply.done.reason == "length":
            await self.notice("the answer was cut off at the model's length limit; ask for a shorter answer "
                               "or raise [provider] num_ctx")
        return TurnResult(text=text, notices=self.notices)

    async def notice(self, text: str) -> None:
        self.notices.append(text)
        await self.sink(Notice(text))
