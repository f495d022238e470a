"""The shell tool runs only allowlisted programs, without a shell, capped, scrubbed and time-limited."""

from __future__ import annotations

import pytest

from edge.errors import ToolError
from edge.platform.logging import register_secret
from edge.tools.shell import MAX_OUTPUT_BYTES, shell_tools


def shell(tmp_path, allowed=("echo", "date", "sleep", "env", "cat", "yes", "head"), timeout=5.0):
    return shell_tools(allowed, tmp_path, timeout)[0].function


async def test_allowlisted_command_runs(tmp_path):
    assert await shell(tmp_path)("echo hello world") == "exit code 0\nhello world"


@pytest.mark.parametrize("command", ["echo hi; rm -rf /", "echo $(id)", "cat /etc/passwd | head", "echo hi > f",
                                     "echo `id`", "echo hi && reboot"])
async def test_metacharacters_are_refused(tmp_path, command):
    with pytest.raises(ToolError, match="metacharacters"):
        await shell(tmp_path)(command)


@pytest.mark.parametrize("command", ["rm -rf x", "/bin/echo hi", "python3 -c 1"])
async def test_programs_not_on_the_allowlist_are_refused(tmp_path, command):
    with pytest.raises(ToolError, match="not allowed"):
        await shell(tmp_path)(command)


async def test_timeout_kills_the_command(tmp_path):
    with pytest.raises(ToolError, match=r"longer than 0\.5 s"):
        await shell(tmp_path, timeout=0.5)("sleep 5")


async def test_output_is_capped(tmp_path):
    output = await shell(tmp_path)("yes")
    assert len(output) < MAX_OUTPUT_BYTES + 100 and output.endswith("[output cut]")


async def test_secrets_never_reach_the_model(tmp_path, monkeypatch):
    monkeypatch.setenv("TELEGRAM_BOT_TOKEN", "123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQr")
    output = await shell(tmp_path)("env")
    assert "TELEGRAM" not in output  # the child gets a clean environment
    register_secret("hunter2-the-password")
    output = await shell(tmp_path)("echo hunter2-the-password 123456789:AAbbCCddEEffGGhhIIjjKKllMMnnOOppQQr")
    assert "hunter2" not in output and "AAbb" not in output and output.count("[redacted]") == 2
