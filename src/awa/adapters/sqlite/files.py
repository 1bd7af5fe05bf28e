"""The job file's permissions: a new file is readable and writable by its owner only.

A job file holds every job's arguments, errors and callback payloads, which may be personal
data or credentials. ``sqlite3`` would create it ``0644`` (readable by every local user), so
the store creates it first with ``0600``; SQLite then creates the ``-wal`` and ``-shm`` files
with the job file's own mode (its unix VFS copies it, whatever the umask), so all three are
``0600``. A file that already exists keeps its mode, and so do its ``-wal`` and ``-shm``.

``os.umask`` around the connect would do the same, but the umask belongs to the process: a
thread creating a file meanwhile would get the narrowed mode too.
"""

from __future__ import annotations

import os

from awa.domain import DatabaseError

__all__ = ["NEW_FILE_MODE", "create_private"]

#: the mode of a job file the store creates (owner read and write)
NEW_FILE_MODE = 0o600


def create_private(path: str) -> None:
    """Create an empty ``path`` with ``NEW_FILE_MODE`` unless it exists (SQLite takes an
    empty file for a new database). The umask can only narrow the mode further."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, NEW_FILE_MODE)
    except FileExistsError:  # an existing file (or another process's, just made) keeps its mode
        return
    except OSError as exc:  # no such folder, no permission: what sqlite3 would fail on too
        raise DatabaseError(f"creating the SQLite database {path} failed: {exc.strerror}") from exc
    os.close(fd)
