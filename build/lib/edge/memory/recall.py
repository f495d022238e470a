"""Hybrid recall, run on the database thread: BM25 keywords + a quantized vector pass re-ranked exactly.

score = vector_weight × cosine similarity + keyword_weight × BM25 (min-max normalised over the
candidates); optionally decayed by age and diversified with MMR. Candidates come from FTS5 (top 50)
and from sqlite-vec's bit-quantized KNN (top_k × oversample), and are then scored exactly from the
float vectors, so the quantization costs speed, not accuracy.
"""

from __future__ import annotations

import re
import struct
import time
from dataclasses import dataclass

import apsw

from edge.config import MemoryConfig

KEYWORD_CANDIDATES = 50
COMMON_WORD_MEMORIES = 2000
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class Recalled:
    id: int
    content: str
    category: str
    key: str | None
    score: float


def query_words(text: str) -> list[str]:
    """Plain words only (each is then quoted): user text can never be an FTS5 syntax error."""
    return list(dict.fromkeys(w for w in _WORD.findall(text.lower()) if len(w) > 1))


def telling_words(con: apsw.Connection, text: str, have_vector: bool) -> str:
    """The FTS5 query without the words found in more than COMMON_WORD_MEMORIES memories ("what", "about",
    the user's own name): they say little about any one memory, and ranking every memory that holds them
    is what makes keyword search slow on a big store. With no vector to fall back on, they stay."""
    words = query_words(text)
    telling = [w for w in words if con.execute(
        "SELECT count(*) FROM (SELECT 1 FROM memories_fts WHERE memories_fts MATCH ? LIMIT ?)",
        (f'"{w}"', COMMON_WORD_MEMORIES + 1)).fetchone()[0] <= COMMON_WORD_MEMORIES]
    return " OR ".join(f'"{w}"' for w in (telling if telling or have_vector else words))


def search(con: apsw.Connection, query: str, vector: bytes | None, config: MemoryConfig, top_k: int,
           vectors_table: str | None, now: float | None = None) -> list[Recalled]:
    now = now or time.time()
    keyword: dict[int, float] = {}
    match = telling_words(con, query, vector is not None and vectors_table is not None)
    if match:
        for rowid, rank in con.execute(
                "SELECT rowid, bm25(memories_fts) FROM memories_fts WHERE memories_fts MATCH ? ORDER BY 2 LIMIT ?",
                (match, KEYWORD_CANDIDATES)):
            keyword[rowid] = -rank  # bm25() is lower-is-better
    candidates = set(keyword)
    if vector is not None and vectors_table:
        candidates.update(row[0] for row in con.execute(
            f"SELECT rowid FROM {vectors_table} WHERE embedding MATCH vec_quantize_binary(?) AND k = ?",
            (vector, top_k * config.oversample)))
    if not candidates:
        return []
    marks = ",".join("?" * len(candidates))
    if vector is not None:  # exact cosine for every candidate, in the same query
        rows = con.execute(
            f"SELECT m.id, m.content, m.category, m.key, m.updated_at, v.vector, vec_distance_cosine(v.vector, ?)"
            f" FROM memories m LEFT JOIN memory_vectors v ON v.id = m.id WHERE m.id IN ({marks})",
            [vector, *candidates]).fetchall()
    else:
        rows = con.execute(f"SELECT id, content, category, key, updated_at, NULL, NULL FROM memories WHERE id IN ({marks})",
                           list(candidates)).fetchall()
    similarity = {row[0]: max(0.0, 1.0 - row[6]) for row in rows if row[6] is not None}
    low, high = (min(keyword.values()), max(keyword.values())) if keyword else (0.0, 0.0)
    scored = []
    for memory_id, content, category, key, updated_at, _, _ in rows:
        words = (keyword[memory_id] - low) / (high - low) if memory_id in keyword and high > low else float(memory_id in keyword)
        if vector is None:
            score = words
        else:
            score = config.vector_weight * similarity.get(memory_id, 0.0) + config.keyword_weight * words
        if config.recency_half_life_days and category in ("daily", "conversation"):
            score *= 0.5 ** ((now - updated_at) / 86400 / config.recency_half_life_days)
        if score >= config.min_relevance:
            scored.append(Recalled(memory_id, content, category, key, round(score, 4)))
    scored.sort(key=lambda r: r.score, reverse=True)
    if config.mmr and vector is not None:
        return _mmr(con, scored, {row[0]: row[5] for row in rows}, config.mmr_lambda, top_k)
    return scored[:top_k]


def _mmr(con: apsw.Connection, scored: list[Recalled], vectors: dict[int, bytes | None], weight: float,
         top_k: int) -> list[Recalled]:
    """Maximal marginal relevance: each next pick trades relevance against likeness to those already picked."""
    chosen: list[Recalled] = []
    pool = scored[: top_k * 4]
    while pool and len(chosen) < top_k:
        def value(item: Recalled) -> float:
            likeness = max((_cosine(vectors.get(item.id), vectors.get(c.id)) for c in chosen), default=0.0)
            return weight * item.score - (1 - weight) * likeness

        best = max(pool, key=value)
        chosen.append(best)
        pool.remove(best)
    return chosen


def _cosine(a: bytes | None, b: bytes | None) -> float:
    if a is None or b is None:
        return 0.0
    count = len(a) // 4
    return sum(x * y for x, y in zip(struct.unpack(f"{count}f", a), struct.unpack(f"{count}f", b), strict=True))


def exact_top(con: apsw.Connection, vector: bytes, k: int) -> list[int]:
    """Brute-force cosine over every vector: the reference that recall@k is measured against."""
    return [row[0] for row in con.execute(
        "SELECT id FROM memory_vectors ORDER BY vec_distance_cosine(vector, ?) LIMIT ?", (vector, k))]

