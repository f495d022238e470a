"""Model Markdown → Telegram's HTML subset, and long replies split at sensible places under 4096 characters."""

from __future__ import annotations

import html
import re

LIMIT = 4096
_CHUNK = 3800  # HTML entities make a chunk longer; keep room
_FENCE = re.compile(r"```[\w+-]*\n?(.*?)```", re.S)
_INLINE = [
    (re.compile(r"`([^`\n]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*(.+?)\*\*", re.S), r"<b>\1</b>"),
    (re.compile(r"(?<![\w*])\*(?!\s)([^*\n]+?)\*(?![\w*])"), r"<i>\1</i>"),
    (re.compile(r"(?<!\w)_(?!\s)([^_\n]+?)_(?!\w)"), r"<i>\1</i>"),
    (re.compile(r"\[([^\]\n]+)\]\((https?://[^)\s]+)\)"), r'<a href="\2">\1</a>'),
]


def to_html(markdown: str) -> str:
    """Escape everything, then turn the common Markdown marks into tags Telegram accepts."""
    blocks: list[str] = []

    def keep_block(match: re.Match[str]) -> str:
        blocks.append(f"<pre>{html.escape(match.group(1).rstrip())}</pre>")
        return f"\x00{len(blocks) - 1}\x00"

    text = html.escape(_FENCE.sub(keep_block, markdown), quote=False)
    for pattern, replacement in _INLINE:
        text = pattern.sub(replacement, text)
    text = re.sub(r"^#{1,6} +(.+)$", r"<b>\1</b>", text, flags=re.M)
    return re.sub(r"\x00(\d+)\x00", lambda m: blocks[int(m.group(1))], text)


def split(text: str, limit: int = _CHUNK) -> list[str]:
    """Pieces of at most `limit` characters, cut at a paragraph, else a line, else a sentence, else a space."""
    pieces = []
    while len(text) > limit:
        cut = _best_cut(text[:limit])
        pieces.append(text[:cut].rstrip())
        text = text[cut:].lstrip()
    if text.strip():
        pieces.append(text)
    return pieces


def _best_cut(window: str) -> int:
    for separator in ("\n\n", "\n", ". ", " "):
        at = window.rfind(separator)
        if at > len(window) // 3:  # a cut too near the start would make a stub of a message
            return at + (1 if separator == ". " else 0)  # the full stop stays with its sentence
    return len(window)
