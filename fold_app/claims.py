"""Several fold workers, one queue.

PostgreSQL: any number of workers share the Delivery queue. Before folding a
delivery a worker claims its source with a session-level advisory lock
(`pg_try_advisory_lock`, never waiting). A source already claimed by another
worker is left to that worker for the rest of the pass: it is folding that
source in journal order and will read the queue again before its pass ends, so
skipping is safe, and it keeps journal order within a source (only the claim
holder folds the source) while the workers fold different sources in parallel.
A worker that dies (even by SIGKILL) loses its connection, and PostgreSQL
releases its claims with it. The conditional outcome write in fold.py remains
the last guard: a delivery no longer queued is never folded again.

SQLite: one writer at a time anyway, so one fold worker. `SingleWorkerLock`
makes a second one refuse to start, saying who holds the database; the lock is
an flock on a file beside the database, which the kernel releases when its
holder dies, so a crashed worker's successor simply takes it over.
"""

from __future__ import annotations

import fcntl
import os
import socket
from datetime import UTC, datetime
from pathlib import Path

from django.db import connection

# First key of the advisory lock pair: "fold" in ASCII, so other users of
# advisory locks on the same database do not collide with source ids.
_LOCK_SPACE = 0x666F6C64


def lock_key(source_id: int) -> int:
    """The source's second key: the two-key advisory lock takes 32-bit signed
    integers and source ids are 64-bit, so larger ids wrap. Two sources sharing
    a key only fold one at a time (a worker's own locks are reentrant)."""
    return (source_id + 2**31) % 2**32 - 2**31


class SourceClaims:
    """Per-source claims of this thread's database connection (PostgreSQL);
    on other databases every claim succeeds (one worker, see SingleWorkerLock)."""

    def __init__(self) -> None:
        self.held: set[int] = set()

    @staticmethod
    def enabled() -> bool:
        return connection.vendor == "postgresql"

    def claim(self, source_id: int) -> bool:
        if source_id in self.held:
            return True
        if not self.enabled():
            return True
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_try_advisory_lock(%s, %s)",
                [_LOCK_SPACE, lock_key(source_id)],
            )
            got = bool(cursor.fetchone()[0])
        if got:
            self.held.add(source_id)
        return got

    def release(self, source_id: int) -> None:
        if source_id not in self.held:
            return
        self.held.discard(source_id)
        if connection.connection is None:
            return  # the connection went (and its locks with it)
        try:
            with connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_advisory_unlock(%s, %s)",
                    [_LOCK_SPACE, lock_key(source_id)],
                )
        except Exception:  # noqa: BLE001 - a broken connection has released it
            connection.close_if_unusable_or_obsolete()


class AnotherFoldWorker(RuntimeError):
    pass


def _sqlite_path() -> Path | None:
    if connection.vendor != "sqlite":
        return None
    name = str(connection.settings_dict["NAME"])
    if not name or name == ":memory:" or name.startswith("file:"):
        return None  # an in-memory database (tests): no other process can share it
    return Path(name)


class SingleWorkerLock:
    """At most one fold worker per SQLite database (see the module doc)."""

    def __init__(self, database: Path | None = None) -> None:
        self.database = database if database is not None else _sqlite_path()
        self._fd: int | None = None

    @property
    def path(self) -> Path | None:
        if self.database is None:
            return None
        return self.database.with_name(self.database.name + ".fold-worker.lock")

    def acquire(self) -> None:
        """Take the lock or raise AnotherFoldWorker naming the holder."""
        path = self.path
        if path is None or self._fd is not None:
            return
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 500).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise AnotherFoldWorker(
                f"Another fold worker already folds {self.database} ({holder}). "
                "With SQLite only one fold worker may run: stop that one first "
                "(`serve` runs one unless NEWSROOM_FOLD_IN_SERVE=0), or use "
                "PostgreSQL to run several."
            ) from None
        holder = (
            f"pid {os.getpid()} on {socket.gethostname()}, "
            f"since {datetime.now(UTC).isoformat(timespec='seconds')}"
        )
        os.ftruncate(fd, 0)
        os.write(fd, holder.encode())
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)  # closing the descriptor drops the flock
            self._fd = None

    def __enter__(self) -> SingleWorkerLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()
