"""The crawl directory: one writer at a time, and no file in it opened through a symlink.

Two processes crawling into one directory would take each other's leases and send two
requests to one host at once, so a crawl holds an exclusive ``flock`` on ``DIR/lock`` for as
long as it runs.  The kernel drops the lock with its holder, SIGKILL included, so a crash
never leaves a stale lock behind; the file names the holder (pid, host, start) for the
sentence a second process prints.

A symlink planted as ``DIR/pages.jsonl`` (or the frontier, or ``warc``) would make the crawler
cut and append to some other file, so every name the crawl writes is checked not to be one,
and the files opened here are opened with ``O_NOFOLLOW``.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import socket
import time
from pathlib import Path

NAMES = ("frontier.sqlite3", "frontier.sqlite3-wal", "frontier.sqlite3-shm", "frontier.sqlite3-journal",
         "pages.jsonl", "warc", "lock")  # fmt: skip


class CrawlFileError(Exception):
    """A crawl file cannot be used: one sentence for the operator."""


def describe(exc: OSError, path: Path) -> str:
    """An OSError on ``path`` as one sentence."""
    why = exc.strerror or str(exc)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write to {path}: {why} (check the directory's permissions, or choose another --out)"
    if exc.errno == errno.ENOSPC:
        return f"cannot write to {path}: the disk is full"
    if exc.errno == errno.ELOOP:
        return f"{path} is a symbolic link: a crawl opens none of its files through one"
    return f"cannot use {path}: {why}"


def prepare(out: Path) -> None:
    """Make ``out`` if needed; CrawlFileError when it or a file the crawl writes in it cannot be used."""
    if out.exists() and not out.is_dir():
        raise CrawlFileError(f"{out} is a file: --out needs a directory")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise CrawlFileError(describe(exc, out)) from None
    for name in NAMES:
        path = out / name
        if path.is_symlink():
            raise CrawlFileError(
                f"{path} is a symbolic link: a crawl opens none of its files through one (remove it)"
            )
    if not os.access(out, os.W_OK | os.X_OK):
        raise CrawlFileError(f"cannot write to {out}: permission denied (choose another --out)")
    for name in ("frontier.sqlite3", "pages.jsonl"):
        path = out / name
        if path.exists() and not os.access(path, os.R_OK | os.W_OK):
            raise CrawlFileError(f"cannot write to {path}: permission denied")


def open_nofollow(path: Path, flags: int, mode: int = 0o644) -> int:
    """``os.open`` that refuses a symlink (CrawlFileError), for the files a crawl writes."""
    try:
        return os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    except OSError as exc:
        raise CrawlFileError(describe(exc, path)) from None


class DirLock:
    """An exclusive lock on ``DIR/lock``, held until ``release`` or the process's end."""

    def __init__(self, out: Path) -> None:
        self.path = out / "lock"
        self._fd = open_nofollow(self.path, os.O_RDWR | os.O_CREAT)
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = _read(self._fd)
            os.close(self._fd)
            if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise CrawlFileError(
                    f"another manners crawl ({holder or 'a process that has not said who it is'})"
                    f" is writing to {out}: one crawl per directory (wait for it, or stop it)"
                ) from None
            raise CrawlFileError(describe(exc, self.path)) from None
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        os.ftruncate(self._fd, 0)
        os.pwrite(self._fd, f"pid {os.getpid()} on {socket.gethostname()}, since {stamp}\n".encode(), 0)

    def release(self) -> None:
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                fcntl.flock(self._fd, fcntl.LOCK_UN)
                os.close(self._fd)
            self._fd = -1


def _read(fd: int) -> str:
    with contextlib.suppress(OSError):
        text = os.pread(fd, 200, 0).decode("utf-8", "replace").strip()
        return "".join(c for c in text if c.isprintable())
    return ""
