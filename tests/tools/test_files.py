"""File tools stay inside the workspace whatever path the model invents."""

from __future__ import annotations

import os

import pytest

from edge.errors import ToolError
from edge.tools.files import file_tools, resolve_inside


@pytest.fixture
def tools(tmp_path):
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    return workspace, {t.name: t.function for t in file_tools(workspace)}


@pytest.mark.parametrize("path", ["../outside.txt", "notes/../../outside.txt", "/etc/passwd", ".env", "keys/server.pem",
                                  "id_rsa", ".ssh/config", "credentials.json"])
def test_paths_outside_or_secret_are_refused(tools, path):
    workspace, _ = tools
    with pytest.raises(ToolError):
        resolve_inside(workspace, path)


def test_symlink_escape_is_refused(tools, tmp_path):
    workspace, _ = tools
    os.symlink(tmp_path / "outside.txt", workspace / "link.txt")
    with pytest.raises(ToolError, match="outside the workspace"):
        resolve_inside(workspace, "link.txt")


async def test_write_read_list_round_trip(tools):
    workspace, t = tools
    assert await t["file_write"]("notes/todo.md", "water the plants") == "Wrote 16 bytes to notes/todo.md."
    await t["file_write"]("notes/todo.md", "\nfeed the cat", append=True)
    assert await t["file_read"]("notes/todo.md") == "water the plants\nfeed the cat"
    assert await t["file_read"](str(workspace / "notes/todo.md")) == "water the plants\nfeed the cat"  # absolute inside is fine
    assert await t["file_list"]() == "notes/"
    assert await t["file_list"]("notes") == "todo.md (29 bytes)"


async def test_missing_file_error_says_what_to_do(tools):
    _, t = tools
    with pytest.raises(ToolError, match="file_list shows what is there"):
        await t["file_read"]("nope.md")
