"""The shell tool: allowlisted programs only, run without a shell, time-limited, output capped and scrubbed."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
from pathlib import Path

from edge.errors import ToolError
from edge.platform.logging import scrub
from edge.tools.base import Tool, tool

_METACHARACTERS = set(";|&$`<>(){}\\\n*?!~")
MAX_OUTPUT_BYTES = 16_000
# The child gets a clean environment: no API keys or tokens can leak through `env` or `printenv`.
_SAFE_ENV = {"PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}


def shell_tools(allowed: tuple[str, ...], workdir: Path, timeout_s: float) -> list[Tool]:
    async def shell(command: str) -> str:
        """Run one allowlisted command on the device (no pipes or redirection) and return its output.

        Args:
            command: the command line, e.g. "df -h" or "uptime".
        """
        argv = parse_command(command, allowed)
        try:
            process = await asyncio.create_subprocess_exec(
                *argv, cwd=workdir, env=_SAFE_ENV, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT, start_new_session=True,
            )
        except FileNotFoundError:
            raise ToolError(f"{argv[0]} is allowed but not installed on this device") from None
        try:
            output = await asyncio.wait_for(_read_capped(process), timeout_s)
        except TimeoutError:
            _kill(process)
            raise ToolError(f"{argv[0]} ran longer than {timeout_s:g} s and was stopped") from None
        finally:
            if process.returncode is None:
                _kill(process)
                await process.wait()
        text = scrub(output.decode("utf-8", errors="replace")).rstrip()
        return f"exit code {process.returncode}\n{text}" if text else f"exit code {process.returncode} (no output)"

    return [tool(shell, risk="high", read_only=False, timeout_s=timeout_s + 5)]


def parse_command(command: str, allowed: tuple[str, ...]) -> list[str]:
    bad = sorted(set(command) & _METACHARACTERS)
    if bad:
        raise ToolError(f"shell metacharacters are not allowed ({' '.join(bad)}); run one plain command")
    try:
        argv = shlex.split(command)
    except ValueError as exc:
        raise ToolError(f"cannot parse the command: {exc}") from None
    if not argv:
        raise ToolError("the command is empty")
    program = os.path.basename(argv[0])
    if program not in allowed or "/" in argv[0]:
        raise ToolError(f"{argv[0]!r} is not allowed; allowed commands: {', '.join(allowed)}")
    return argv


async def _read_capped(process: asyncio.subprocess.Process) -> bytes:
    assert process.stdout is not None
    data = b""
    while chunk := await process.stdout.read(65536):
        data += chunk
        if len(data) > MAX_OUTPUT_BYTES:  # a runaway command is stopped, not buffered
            _kill(process)
            data = data[:MAX_OUTPUT_BYTES] + b"\n... [output cut]"
            break
    await process.wait()
    return data


def _kill(process: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, 9)
