"""Opening an SQLite database to read it while writing nothing beside it: the one way every
reader of a results directory (report, transcript, the analyses, `agentsim.open`, watch, an
import's checks, a resume's checks) opens `agentsim.db` (agentsim/store.py, `Store.read_only`).

SQLite's plain read-only open (`mode=ro`) is not enough: on a database in WAL mode it creates
`-wal` and `-shm` when they are missing, and writes its read marks into the `-shm` when they
are there. Which open writes nothing depends on the side files, as checked with a writer
recording beside the reader, with none, and after a writer killed with SIGKILL
(tests/test_readers_change_nothing.py):

- no `-wal`, or an empty one (the writer closed, or none ever ran in WAL mode): `immutable=1`.
  SQLite takes no lock, reads no side file and creates none. It is safe because no writer has
  the file open: a writer in WAL mode keeps its `-wal` while it does.
- a `-wal` with its `-shm` (a writer recording now, or one killed): `mode=ro&readonly_shm=1`.
  The reader maps the `-shm` read-only and never writes a read mark into it (it takes one
  the writer left, under a shared lock). Where no live connection holds the `-shm` (a killed
  writer), SQLite does not trust it and rebuilds the WAL's index from the `-wal` in the
  reader's own memory: every committed transaction is read, nothing is written.
- a `-wal` holding frames without its `-shm` (a directory copied without it): SQLite cannot read
  that WAL without creating the `-shm`, so the two files are copied into a private temporary
  directory, read there, and removed when the connection closes. (Rare: agentsim's writers
  leave both or neither.)

In the same process as a writer of the same file (a notebook that runs and reads), SQLite
shares that writer's `-shm` mapping: the reader's marks are then the writer's own kind of change.
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Any


class ReadingConnection(sqlite3.Connection):
    """A connection to a file opened read-only; `close` also removes the private copy a `-wal`
    without its `-shm` is read from."""

    copy: Path | None = None

    def close(self) -> None:
        try:
            super().close()
        finally:
            if self.copy is not None:
                shutil.rmtree(self.copy, ignore_errors=True)
                self.copy = None


def open_read_only(path: Path | str, *, timeout: float = 5.0) -> ReadingConnection:
    """A read-only connection to the database at `path` that leaves every file beside it as
    it was (see the module's docstring). `sqlite3.Error` if it cannot be opened; the caller
    checks first that the file exists and is not empty."""
    path = Path(path).resolve()  # (SQLite finds the side files beside the file a link points to)
    wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
    wal_size = _size(wal)
    if not wal_size:
        return _connect(path, "immutable=1", timeout)
    if shm.is_file():
        return _connect(path, "mode=ro&readonly_shm=1", timeout)
    copy = Path(tempfile.mkdtemp(prefix="agentsim-read-"))
    try:
        shutil.copyfile(path, copy / path.name)
        shutil.copyfile(wal, copy / wal.name)
        connection = _connect(copy / path.name, "mode=ro", timeout)
    except BaseException:
        shutil.rmtree(copy, ignore_errors=True)
        raise
    connection.copy = copy
    return connection


def _connect(path: Path, parameters: str, timeout: float) -> ReadingConnection:
    connection: Any = sqlite3.connect(f"{path.as_uri()}?{parameters}", uri=True, timeout=timeout,
                                      factory=ReadingConnection)
    try:
        connection.execute("PRAGMA temp_store=MEMORY")  # a reader's temporary views stay in memory
    except BaseException:
        connection.close()
        raise
    return connection


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0
