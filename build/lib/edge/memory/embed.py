"""Embeddings for memory: batched calls to the embedding model, cached by content hash, one identity.

The identity ("ollama:all-minilm:384") is recorded with the vectors: vectors of two models are never
mixed, and a change is fixed by `edge memory reindex`.
"""

from __future__ import annotations

import hashlib
import math
import struct

import apsw

from edge.errors import EdgeError, ProviderError
from edge.memory.db import Database, transaction
from edge.providers.base import Provider

BATCH = 32


class EmbeddingError(EdgeError):
    """The embedding model cannot be used now; recall falls back to keywords."""


def pack(vector: list[float]) -> bytes:
    norm = math.sqrt(sum(x * x for x in vector)) or 1.0
    return struct.pack(f"{len(vector)}f", *(x / norm for x in vector))


class Embedder:
    def __init__(self, provider: Provider, model: str, dims: int, db: Database) -> None:
        self.provider, self.model, self.dims, self.db = provider, model, dims, db
        self.identity = f"{provider.config.kind}:{model}:{dims}"

    async def embed(self, texts: list[str], cache: bool = True) -> list[bytes]:
        """Packed unit vectors, one per text. Stored contents are cached; one-off queries are not (SD card)."""
        hashes = [hashlib.sha256(f"{self.identity}\n{text}".encode()).hexdigest() for text in texts]
        found: dict[str, bytes] = {}
        if cache:
            marks = ",".join("?" * len(hashes))
            rows = await self.db.call(lambda con: con.execute(
                f"SELECT hash, vector FROM embedding_cache WHERE hash IN ({marks})", hashes).fetchall())
            found = {row[0]: row[1] for row in rows}
        missing = [i for i, h in enumerate(hashes) if h not in found]
        fresh: dict[str, bytes] = {}
        for start in range(0, len(missing), BATCH):
            batch = missing[start:start + BATCH]
            try:
                vectors = await self.provider.embed([texts[i] for i in batch], self.model)
            except ProviderError as exc:
                raise EmbeddingError(f"the embedding model {self.model!r} is not available ({exc})") from exc
            for index, vector in zip(batch, vectors, strict=True):
                if len(vector) != self.dims:
                    raise EmbeddingError(f"{self.model!r} makes {len(vector)}-dimensional vectors, not {self.dims}: "
                                         f"set [memory] dims = {len(vector)}, then run `edge memory reindex`")
                fresh[hashes[index]] = pack(vector)
        if cache and fresh:
            def store(con: apsw.Connection) -> None:
                with transaction(con):
                    con.executemany("INSERT OR REPLACE INTO embedding_cache (hash, vector) VALUES (?, ?)", fresh.items())

            await self.db.call(store)
        return [found.get(h) or fresh[h] for h in hashes]
