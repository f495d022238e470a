"""`edge agent -m hello` end to end: wall time and peak RSS of the process, against a zero-latency model.

Usage: python bench/oneshot.py [runs]      (targets on a 2-core dev machine: ≤ 0.6 s, ≤ 45 MB)
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import percentile, server_process


def main(runs: int = 15) -> None:
    server, port = server_process()
    edge = Path(sys.executable).with_name("edge")
    walls, rss = [], []
    with tempfile.TemporaryDirectory() as state:
        env = {**os.environ, "EDGE_PROVIDER__BASE_URL": f"http://127.0.0.1:{port}", "EDGE_PROVIDER__MODEL": "test-model",
               "EDGE_PATHS__STATE_DIR": state}
        try:
            for run in range(runs + 1):
                started = time.perf_counter()
                process = subprocess.Popen([str(edge), "agent", "-m", "hello"], env=env, stdout=subprocess.PIPE,
                                           stderr=subprocess.PIPE)
                _, status, usage = os.wait4(process.pid, 0)
                wall = time.perf_counter() - started
                output = process.stdout.read().decode()
                if status != 0 or "Hello" not in output:
                    raise SystemExit(f"edge agent failed: {process.stderr.read().decode()}")
                if run:  # the first run warms the page cache
                    walls.append(wall)
                    rss.append(usage.ru_maxrss / 1024)
        finally:
            server.terminate()
    print(f"edge agent -m hello  ({runs} runs, zero-latency scripted model)")
    print(f"  wall time   p50 {statistics.median(walls):.3f} s   p90 {percentile(walls, 0.9):.3f} s")
    print(f"  peak RSS    p50 {statistics.median(rss):.1f} MB   max {max(rss):.1f} MB")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 15)
