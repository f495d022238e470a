"""Log set-up for every command: journald-friendly lines on stderr, and secrets scrubbed everywhere.

`scrub()` is also what tool output passes through before the model or the audit table sees it.
"""

from __future__ import annotations

import logging
import os
import re
import sys

# Shapes of credentials worth hiding even when we do not know the value (tokens in URLs, headers, env).
_SECRET_SHAPES = re.compile(
    r"(?P<bot>\b\d{6,12}:[A-Za-z0-9_-]{30,}\b)"  # Telegram bot token
    r"|(?P<sk>\bsk-[A-Za-z0-9_-]{16,}\b)"  # OpenAI-style API key
    r"|(?P<bearer>(?i:bearer)\s+[A-Za-z0-9._~+/=-]{12,})"
    r"|(?P<assign>(?i:\b[A-Z0-9_]*(?:TOKEN|SECRET|PASSWORD|API_KEY|APIKEY)[A-Z0-9_]*)\s*[=:]\s*)\S+"
)
_known_secrets: set[str] = set()


def register_secret(value: str | None) -> None:
    """Remember a secret's value so that it is replaced wherever it appears later."""
    if value and len(value) >= 6:
        _known_secrets.add(value)


def scrub(text: str) -> str:
    for value in _known_secrets:
        if value in text:
            text = text.replace(value, "[redacted]")

    def hide(match: re.Match[str]) -> str:
        if match.group("assign"):
            return match.group("assign") + "[redacted]"
        return "[redacted]"

    return _SECRET_SHAPES.sub(hide, text)


class _ScrubbingFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return scrub(super().format(record))


def setup(level: str = "info") -> None:
    """One handler on stderr. Under systemd (JOURNAL_STREAM set) journald adds the time itself."""
    under_journald = bool(os.environ.get("JOURNAL_STREAM"))
    fmt = "%(levelname)s %(name)s: %(message)s" if under_journald else "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_ScrubbingFormatter(fmt, datefmt="%Y-%m-%d %H:%M:%S"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
