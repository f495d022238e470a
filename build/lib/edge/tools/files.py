"""File tools confined to the workspace: no `..`, no absolute paths outside, no symlink escape, no secrets."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from edge.errors import ToolError
from edge.tools.base import Tool, tool

# Names that hold credentials by convention; refused even inside the workspace.
_CREDENTIAL_NAMES = ("id_rsa", "id_ed25519", "id_ecdsa", "credentials", "secrets", "token", "passwd", "shadow")
_CREDENTIAL_SUFFIXES = (".pem", ".key", ".p12", ".pfx", ".kdbx", ".keystore")
MAX_READ_BYTES = 64_000
MAX_WRITE_BYTES = 256_000


def resolve_inside(workspace: Path, relative: str) -> Path:
    """The real path of `relative` inside the workspace, or a ToolError that says why not."""
    root = workspace.resolve()
    if not relative.strip():
        relative = "."
    candidate = Path(relative)
    if candidate.is_absolute():
        try:
            candidate = candidate.relative_to(root)
        except ValueError:
            raise ToolError(f"{relative!r} is outside the workspace; use a path relative to it") from None
    if ".." in candidate.parts:
        raise ToolError(f"{relative!r} leaves the workspace ('..' is not allowed)")
    for part in candidate.parts:
        lowered = part.lower()
        if (part.startswith(".") and part != ".") or lowered.startswith(_CREDENTIAL_NAMES) or lowered.endswith(_CREDENTIAL_SUFFIXES):
            raise ToolError(f"{relative!r} looks like a hidden or credential file and is off limits")
    resolved = (root / candidate).resolve()
    if resolved != root and root not in resolved.parents:  # a symlink that points out of the workspace
        raise ToolError(f"{relative!r} points outside the workspace")
    return resolved


def file_tools(workspace: Path) -> list[Tool]:
    async def file_read(path: str) -> str:
        """Read a text file from the workspace.

        Args:
            path: the file, relative to the workspace, e.g. "notes/todo.md".
        """
        target = resolve_inside(workspace, path)
        if not target.is_file():
            raise ToolError(f"no file {path!r} in the workspace (file_list shows what is there)")
        data = await asyncio.to_thread(_read_head, target)
        text = data.decode("utf-8", errors="replace")
        if len(data) == MAX_READ_BYTES:
            text += f"\n… [only the first {MAX_READ_BYTES} bytes are shown]"
        return text

    async def file_write(path: str, content: str, append: bool = False) -> str:
        """Write a text file in the workspace, creating folders as needed.

        Args:
            path: the file, relative to the workspace.
            content: the text to write.
            append: add to the end instead of replacing the file.
        """
        data = content.encode("utf-8")
        if len(data) > MAX_WRITE_BYTES:
            raise ToolError(f"content is {len(data)} bytes; the limit is {MAX_WRITE_BYTES}")
        target = resolve_inside(workspace, path)
        if target.is_dir():
            raise ToolError(f"{path!r} is a folder")
        await asyncio.to_thread(_write, target, data, append)
        return f"{'Appended' if append else 'Wrote'} {len(data)} bytes to {path}."

    async def file_list(path: str = ".") -> str:
        """List the files and folders in a workspace folder.

        Args:
            path: the folder, relative to the workspace; "." for the top.
        """
        target = resolve_inside(workspace, path)
        if not target.is_dir():
            raise ToolError(f"no folder {path!r} in the workspace")
        entries = sorted(e for e in os.listdir(target) if not e.startswith("."))
        lines = [f"{name}/" if (target / name).is_dir() else f"{name} ({(target / name).stat().st_size} bytes)" for name in entries]
        return "\n".join(lines) or "(empty)"

    return [
        tool(file_read, core=True),
        tool(file_write, risk="medium", read_only=False),
        tool(file_list),
    ]


def _read_head(path: Path) -> bytes:
    with path.open("rb") as handle:
        return handle.read(MAX_READ_BYTES)


def _write(path: Path, data: bytes, append: bool) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if append:
        with path.open("ab") as handle:
            handle.write(data)
        return
    temporary = path.with_name(f".{path.name}.tmp")  # write then rename: a full disk never leaves half a file
    try:
        temporary.write_bytes(data)
        os.replace(temporary, path)
    except OSError as exc:
        temporary.unlink(missing_ok=True)
        raise ToolError(f"could not write {path.name}: {exc.strerror}") from None
