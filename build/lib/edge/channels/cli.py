"""The terminal channel: `edge agent -m` (one turn) and `edge chat` (interactive, with approvals).

Answers go to stdout as they stream; tool activity and notices go to stderr for `agent -m`, so a
script reading stdout gets only the answer.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections import deque
from typing import TextIO

from edge.agent import commands
from edge.agent.events import Delta, Notice, ToolActivity, TurnEvent
from edge.app import Runtime
from edge.tools.policy import Answer, ApprovalRequest, Approver

PROMPT = "you> "


def _printer(answers: TextIO, activity: TextIO):  # type: ignore[no-untyped-def]
    async def sink(event: TurnEvent) -> None:
        if isinstance(event, Delta):
            answers.write(event.text)
            answers.flush()
        elif isinstance(event, ToolActivity):
            if event.result is None:
                activity.write(f"\n  · {event.name} …")
            else:
                first_line = event.result.content.strip().splitlines()[0] if event.result.content.strip() else ""
                activity.write(f" {event.result.outcome}: {first_line[:100]}\n")
            activity.flush()
        elif isinstance(event, Notice):
            activity.write(f"\n  ! {event.text}\n")
            activity.flush()

    return sink


def _parse_answer(line: str | None) -> Answer:
    word = (line or "").strip().lower()
    if word in ("a", "always"):
        return "always"
    return "yes" if word in ("y", "yes") else "no"


async def one_shot(runtime: Runtime, text: str, session_key: str) -> int:
    """`edge agent -m`: one turn, the answer streamed to stdout; exit code 1 when no answer was possible."""
    session = await runtime.store.current_session(session_key)
    approver = _tty_approver() if sys.stdin.isatty() else None
    result = await runtime.agent.turn(session, text, _printer(sys.stdout, sys.stderr), approver)
    sys.stdout.write("\n")
    sys.stdout.flush()
    await runtime.agent.settle(session)  # a long session is compacted before the process exits
    return 1 if result.error else 0


def _tty_approver() -> Approver:
    async def approve(request: ApprovalRequest) -> Answer:
        question = f"\nAllow {request.describe()}? [y]es / [n]o / [a]lways this session: "
        return _parse_answer(await asyncio.to_thread(_ask_stdin, question))

    return approve


def _ask_stdin(question: str) -> str | None:
    sys.stderr.write(question)
    sys.stderr.flush()
    line = sys.stdin.readline()
    return line or None


class Chat:
    """`edge chat`: lines from stdin, one turn at a time; /stop, Ctrl-C cancel the turn, Ctrl-D quits."""

    def __init__(self, runtime: Runtime, session_key: str = "cli:chat") -> None:
        self.runtime = runtime
        self.session_key = session_key
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self.backlog: deque[str | None] = deque()  # typed while a turn ran; handled after it
        self.turn: asyncio.Task[object] | None = None
        self.approval: asyncio.Future[Answer] | None = None
        self.interactive = sys.stdin.isatty()
        self.sink = _printer(sys.stdout, sys.stdout)

    async def run(self) -> int:
        loop = asyncio.get_running_loop()
        threading.Thread(target=self._read_stdin, args=(loop,), name="edge-stdin", daemon=True).start()
        loop.add_signal_handler(signal.SIGINT, self._interrupt)
        try:
            print(f"edge — {self.runtime.provider.config.model}. /help for commands, Ctrl-D to quit.")
            while True:
                self._prompt()
                line = self.backlog.popleft() if self.backlog else await self.lines.get()
                if line is None:
                    return 0
                line = line.strip()
                if not line:
                    continue
                if commands.is_command(line):
                    context = commands.CommandContext(self.runtime, self.session_key, self._stop)
                    print(await commands.handle(line, context))
                    continue
                await self._run_turn(line)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            print()

    def _read_stdin(self, loop: asyncio.AbstractEventLoop) -> None:
        for line in sys.stdin:
            loop.call_soon_threadsafe(self.lines.put_nowait, line)
        loop.call_soon_threadsafe(self.lines.put_nowait, None)

    def _prompt(self) -> None:
        if self.interactive:
            sys.stdout.write(PROMPT)
            sys.stdout.flush()

    async def _run_turn(self, text: str) -> None:
        session = await self.runtime.store.current_session(self.session_key)
        self.turn = asyncio.create_task(self.runtime.agent.turn(session, text, self.sink, self._approve))
        try:
            while not self.turn.done():  # meanwhile, lines may answer an approval or stop the turn
                reader = asyncio.ensure_future(self.lines.get())
                await asyncio.wait({self.turn, reader}, return_when=asyncio.FIRST_COMPLETED)
                if not reader.done():
                    reader.cancel()
                    continue
                self._during_turn(reader.result())
            with contextlib.suppress(asyncio.CancelledError):
                await self.turn
            print()
        finally:
            self.turn = None

    def _during_turn(self, line: str | None) -> None:
        if self.approval is not None and not self.approval.done():
            self.approval.set_result(_parse_answer(line))
            if line is None:
                self.backlog.append(None)
        elif line is not None and line.strip() == "/stop":
            self._stop()
        else:
            self.backlog.append(line)

    async def _approve(self, request: ApprovalRequest) -> Answer:
        print(f"\nAllow {request.describe()}? [y]es / [n]o / [a]lways this session: ", end="", flush=True)
        if self.backlog:  # typed ahead (or piped): lines are answered in the order they came
            line = self.backlog.popleft()
            print(line.strip() if line else "")
            return _parse_answer(line)
        self.approval = asyncio.get_running_loop().create_future()
        try:
            return await self.approval
        finally:
            self.approval = None

    def _stop(self) -> bool:
        if self.turn is None or self.turn.done():
            return False
        self.turn.cancel()
        return True

    def _interrupt(self) -> None:
        if not self._stop():
            print("\n(Ctrl-D quits)")
            self._prompt()
        else:
            print("\n[stopped]")
