"""Sliding-window rate limits per key (a sender, a client address): the brake against runaway loops and floods."""

from __future__ import annotations

import time
from collections import deque


class RateLimiter:
    def __init__(self, limit: int, window_s: float = 60.0, clock=time.monotonic) -> None:  # type: ignore[no-untyped-def]
        self.limit, self.window_s, self._clock = limit, window_s, clock
        self._hits: dict[str, deque[float]] = {}

    def allow(self, key: str) -> bool:
        """Count a hit for `key`; False when it is over the limit (the hit is then not counted)."""
        if self.limit <= 0:
            return True
        now = self._clock()
        hits = self._prune(key, now)
        if len(hits) >= self.limit:
            return False
        hits.append(now)
        return True

    def retry_after(self, key: str) -> float:
        hits = self._prune(key, self._clock())
        return max(0.0, hits[0] + self.window_s - self._clock()) if len(hits) >= self.limit else 0.0

    def _prune(self, key: str, now: float) -> deque[float]:
        hits = self._hits.setdefault(key, deque())
        while hits and hits[0] <= now - self.window_s:
            hits.popleft()
        if len(self._hits) > 10_000:  # bounded memory whatever the clients do
            for stale in [k for k, v in self._hits.items() if not v and k != key]:
                del self._hits[stale]
        return hits
