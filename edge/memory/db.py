"""The single SQLite file: one apsw connection owned by one thread, the only writer.

Every query goes through `Database.call(fn)`, which runs `fn(connection)` on that thread, so the event
loop never blocks on disk and writes are never interleaved. WAL with synchronous=NORMAL keeps fsyncs
(and SD-card wear) low; library errors become StorageError here and nowhere else.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.util
import logging
import os
import sys
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TypeVar

import apsw

from edge.errors import StorageError
from edge.memory.migrations import MIGRATIONS, Migration

log = logging.getLogger(__name__)
T = TypeVar("T")


RESTORE_HINT = ("stop edge, move it aside (mv {path} {path}.damaged) and start edge again: its memories come back "
                "from MEMORY_SNAPSHOT.md in the workspace")


class Database:
    def __init__(self, path: Path, busy_timeout_ms: int = 5000) -> None:
        self.path, self.busy_timeout_ms = path, busy_timeout_ms
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="edge-db")
        self._con: apsw.Connection | None = None
        self.vectors = False  # sqlite-vec loaded: vector recall possible (keyword recall works regardless)

    async def open(self) -> None:
        await self._run(self._open)

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            con = apsw.Connection(str(self.path))
            # Another process writing (`edge memory add` beside the daemon): retry for a bounded time, then fail.
            con.setbusytimeout(self.busy_timeout_ms)
            problem = con.execute("PRAGMA quick_check").fetchone()[0]
            if problem != "ok":
                raise apsw.CorruptError(problem)
            con.execute("PRAGMA journal_mode=WAL")
            con.execute("PRAGMA synchronous=NORMAL")
            con.execute("PRAGMA foreign_keys=ON")
            self.vectors = load_vector_extension(con)
            migrate(con, MIGRATIONS)
        except (apsw.Error, OSError) as exc:
            raise _translate(exc, self.path) from exc
        self._con = con

    async def call(self, fn: Callable[[apsw.Connection], T]) -> T:
        """Run fn(connection) on the database thread; inside `with transaction(con):` it is atomic."""
        return await self._run(lambda: self._guarded(fn))

    def _guarded(self, fn: Callable[[apsw.Connection], T]) -> T:
        if self._con is None:
            raise StorageError("the database is not open")
        try:
            return fn(self._con)
        except (apsw.Error, OSError) as exc:
            raise _translate(exc, self.path) from exc

    async def _run(self, fn: Callable[[], T]) -> T:
        return await asyncio.get_running_loop().run_in_executor(self._executor, fn)

    async def close(self) -> None:
        def _close() -> None:
            if self._con is not None:
                with contextlib.suppress(apsw.Error):
                    self._con.close()
                self._con = None

        await self._run(_close)
        self._executor.shutdown(wait=True)

    async def __aenter__(self) -> Database:
        await self.open()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


def load_vector_extension(con: apsw.Connection) -> bool:
    """Load sqlite-vec's vec0 from its package directory, without importing the package (which would drag
    in the stdlib sqlite3 and a second SQLite library). False where there is no wheel (32-bit ARM, musl)."""
    spec = importlib.util.find_spec("sqlite_vec")
    folders = list(spec.submodule_search_locations or ()) if spec else []
    folders.append(os.path.join(os.path.dirname(sys.executable), "sqlite_vec"))  # the standalone build's layout
    path = next((os.path.join(f, "vec0") for f in folders if os.path.exists(os.path.join(f, "vec0.so"))), None)
    if path is None:
        log.warning("sqlite-vec is not installed: memory recall is keyword-only")
        return False
    try:
        con.enable_load_extension(True)
        con.load_extension(path)
        return True
    except apsw.ExtensionLoadingError as exc:
        log.warning("cannot load sqlite-vec (%s): memory recall is keyword-only", exc)
        return False
    finally:
        con.enable_load_extension(False)


@contextlib.contextmanager
def transaction(con: apsw.Connection) -> Iterator[None]:
    """BEGIN IMMEDIATE … COMMIT. Unlike `with con:`, it does not mask SQLITE_FULL: SQLite has already
    rolled back by itself then, and a second rollback would replace the real error with another."""
    con.execute("BEGIN IMMEDIATE")
    try:
        yield
    except BaseException:
        if con.in_transaction:
            con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")


def migrate(con: apsw.Connection, migrations: list[Migration]) -> int:
    """Apply the migrations not yet applied, each in its own transaction; return the new version."""
    version = con.execute("PRAGMA user_version").fetchone()[0]
    if version > len(migrations):
        raise apsw.SchemaChangeError(
            f"the database has schema version {version}, newer than this edge knows ({len(migrations)}); upgrade edge"
        )
    for number, step in enumerate(migrations[version:], start=version + 1):
        with transaction(con):
            step(con)
            con.execute(f"PRAGMA user_version = {number}")
    return len(migrations)


def _translate(exc: BaseException, path: Path) -> StorageError:
    if isinstance(exc, apsw.FullError) or (isinstance(exc, OSError) and exc.errno == 28):
        return StorageError(f"the disk holding {path} is full: nothing was saved; free some space and try again")
    if isinstance(exc, apsw.BusyError):
        return StorageError(f"the database {path} stayed locked by another process; try again")
    if isinstance(exc, (apsw.CorruptError, apsw.NotADBError)):
        return StorageError(f"the database {path} is damaged ({exc}); " + RESTORE_HINT.format(path=path))
    if isinstance(exc, (apsw.CantOpenError, apsw.ReadOnlyError, PermissionError)):
        return StorageError(f"cannot write the database {path} ({exc}); check the directory's owner and permissions")
    return StorageError(f"database error in {path}: {exc}")
