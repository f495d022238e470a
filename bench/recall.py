"""Memory at scale: insert throughput, hybrid recall latency at 1k / 10k / 100k memories, recall@5 of the
quantized search against exact search, a labelled hit rate, memory use and database size.

Usage: python bench/recall.py [--sizes 1000,10000,100000] [--queries 200]
Target on a 2-core dev machine: hybrid recall p95 ≤ 20 ms at 100k memories (384-d), recall@5 ≥ 0.95.

The data set is generated here and is the same every run: 400 topics, each a cluster of 384-d vectors
around a centre and a small vocabulary; a memory is a noisy point of its topic with words from it. The
embedding model is replaced by these precomputed vectors, so what is measured is edge's own work —
the SQLite writes, FTS5, the sqlite-vec quantized pass and the exact re-rank — not the model's.
"""

from __future__ import annotations

import argparse
import array
import asyncio
import math
import os
import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import orjson
import psutil
from _common import percentile

from edge.config import MemoryConfig
from edge.memory.db import Database
from edge.memory.embed import pack
from edge.memory.memories import Memories
from edge.memory.recall import exact_top, search

DIMS = 384
TOPICS = 400
WORDS_PER_TOPIC = 12
NOISE = 0.9  # per-dimension noise against unit-scale centres: topics overlap, as real embeddings do
BATCH = 500


class PrecomputedEmbedder:
    """Stands in for the embedding model: the vector for each text was made with the text."""

    identity = f"bench:synthetic:{DIMS}"
    dims = DIMS

    def __init__(self) -> None:
        self.vectors: dict[str, bytes] = {}

    async def embed(self, texts: list[str], cache: bool = True) -> list[bytes]:
        return [self.vectors[text] for text in texts]


class DataSet:
    def __init__(self, seed: int = 7) -> None:
        self.random = random.Random(seed)
        self.centres = [[self.random.gauss(0, 1) for _ in range(DIMS)] for _ in range(TOPICS)]
        syllables = ["ka", "lo", "mi", "ne", "ru", "ta", "vo", "zi", "pe", "su", "do", "ga"]
        self.vocab = [[self.random.choice(syllables) + self.random.choice(syllables) + self.random.choice(syllables)
                       + str(t) for _ in range(WORDS_PER_TOPIC)] for t in range(TOPICS)]

    def vector(self, topic: int) -> bytes:
        noise = array.array("b", os.urandom(DIMS))  # fast uniform noise in [-128, 127]
        scale = NOISE * math.sqrt(3) / 128  # uniform noise with standard deviation NOISE
        return pack([c + n * scale for c, n in zip(self.centres[topic], noise, strict=True)])

    def text(self, topic: int, number: int) -> str:
        words = self.random.sample(self.vocab[topic], 4)
        return f"note {number} about {' '.join(words)}"

    def query(self, memory_text: str, memory_vector: bytes) -> tuple[str, bytes]:
        """A question about one memory: two of its words, among words most memories hold; its vector, moved."""
        values = struct.unpack(f"{DIMS}f", memory_vector)
        moved = pack([v + self.random.gauss(0, 0.03) for v in values])
        return "what about the note on " + " ".join(self.random.sample(memory_text.split()[3:], 2)), moved


async def fill(memories: Memories, embedder: PrecomputedEmbedder, data: DataSet, start: int, end: int,
               truth: dict[int, tuple[str, bytes]]) -> float:
    """Insert memories start..end in batches; returns memories per second."""
    began = time.perf_counter()
    for first in range(start, end, BATCH):
        items = []
        for number in range(first, min(end, first + BATCH)):
            topic = number % TOPICS
            text, vector = data.text(topic, number), data.vector(topic)
            embedder.vectors[text] = vector
            items.append((text, "core", None))
            truth[number] = (text, vector)
        await memories.remember_many(items)
    return (end - start) / (time.perf_counter() - began)


async def measure(memories: Memories, embedder: PrecomputedEmbedder, data: DataSet,
                  truth: dict[int, tuple[str, bytes]], count: int) -> dict[str, float]:
    picked = data.random.sample(sorted(truth), count)
    latencies, recall_hits, labelled_hits = [], 0, 0
    vector_only = MemoryConfig(vector_weight=1.0, keyword_weight=0.0, min_relevance=0.0)
    for number in picked:
        text, query_vector = data.query(*truth[number])
        embedder.vectors[text] = query_vector
        started = time.perf_counter()
        found = await memories.recall(text)  # the whole hybrid path, as a turn runs it
        latencies.append((time.perf_counter() - started) * 1000)
        labelled_hits += any(m.id == number + 1 for m in found)
        approximate = await memories.db.call(lambda con, v=query_vector: search(con, "", v, vector_only, 5, "memory_bits"))
        exact = await memories.db.call(lambda con, v=query_vector: exact_top(con, v, 5))
        recall_hits += len({m.id for m in approximate} & set(exact))
    return {"p50": percentile(latencies, 0.5), "p95": percentile(latencies, 0.95),
            "recall@5": recall_hits / (5 * count), "labelled hit@5": labelled_hits / count}


def database_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))


async def build_and_measure(directory: Path, sizes: list[int], query_count: int) -> None:
    """Fill one database up to each size in turn, measuring at each; leave queries for the RSS half."""
    data = DataSet()
    path = directory / "edge.db"
    async with Database(path) as db:
        embedder = PrecomputedEmbedder()
        memories = Memories(db, embedder, MemoryConfig(dims=DIMS))  # type: ignore[arg-type]
        await memories.open()
        truth: dict[int, tuple[str, bytes]] = {}
        single_started = time.perf_counter()
        for number in range(100):  # one at a time, as a conversation stores them
            topic = number % TOPICS
            text, vector = data.text(topic, number), data.vector(topic)
            embedder.vectors[text], truth[number] = vector, (text, vector)
            await memories.remember(text)
        single_rate = 100 / (time.perf_counter() - single_started)
        print(f"insert one at a time: {single_rate:,.0f} memories/s (one transaction each)")
        print(f"{'memories':>9} {'batch insert/s':>15} {'p50 ms':>7} {'p95 ms':>7} {'recall@5':>9} "
              f"{'hit@5':>6} {'DB MB':>6} {'MB/10k':>7}")
        filled = 100
        for size in sizes:
            rate = await fill(memories, embedder, data, filled, size, truth)
            filled = size
            await db.call(lambda con: con.execute("PRAGMA wal_checkpoint(TRUNCATE)"))
            result = await measure(memories, embedder, data, truth, min(query_count, size))
            megabytes = database_bytes(path) / 1e6
            print(f"{size:>9,} {rate:>15,.0f} {result['p50']:>7.2f} {result['p95']:>7.2f} "
                  f"{result['recall@5']:>9.3f} {result['labelled hit@5']:>6.2f} {megabytes:>6.1f} "
                  f"{megabytes / size * 10_000:>7.1f}")
    queries = [data.query(*truth[n]) for n in data.random.sample(sorted(truth), min(query_count, filled))]
    (directory / "queries").write_bytes(orjson.dumps([(text, vector.hex()) for text, vector in queries]))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rss", metavar="DIR", help=argparse.SUPPRESS)  # the fresh-process half
    args = parser.parse_args()
    if args.rss:
        asyncio.run(rss_of_recall(Path(args.rss)))
        return
    process = psutil.Process()
    rss_before = process.memory_info().rss / 1e6
    with tempfile.TemporaryDirectory() as directory:
        asyncio.run(build_and_measure(Path(directory), [int(s) for s in args.sizes.split(",")], args.queries))
        fresh = subprocess.run([sys.executable, __file__, "--rss", directory], capture_output=True, text=True,
                               check=True)
    print(f"bench process RSS: {rss_before:.1f} MB before, {process.memory_info().rss / 1e6:.1f} MB after "
          "(it holds the whole data set)")
    print(fresh.stdout.strip())


async def rss_of_recall(directory: Path) -> None:
    """In a fresh process, as in the daemon: RSS before the database opens, and after the queries ran."""
    process = psutil.Process()
    queries = [(text, bytes.fromhex(vector)) for text, vector in orjson.loads((directory / "queries").read_bytes())]
    before = process.memory_info().rss / 1e6
    async with Database(directory / "edge.db") as db:
        embedder = PrecomputedEmbedder()
        embedder.vectors = dict(queries)
        memories = Memories(db, embedder, MemoryConfig(dims=DIMS))  # type: ignore[arg-type]
        await memories.open()
        for text, _ in queries:
            await memories.recall(text)
        after = process.memory_info().rss / 1e6
    print(f"recall process RSS at the largest size: {before:.1f} MB before opening, {after:.1f} MB after "
          f"{len(queries)} recalls (+{after - before:.1f} MB: SQLite's page cache, sqlite-vec)")


if __name__ == "__main__":
    main()
