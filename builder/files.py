"""The input files of a site: one walk that every reader of the inputs uses, and a safe read.

Inputs are regular files inside the site root. A symbolic link (to a file or a folder) could bring
in a file from outside the root (``/proc/self/environ``) or a folder the incremental scan would have
to follow; a FIFO blocks a reader forever and a device never ends. So the walk never follows a
link, and lists links and special files as *refused*, which the loaders report as errors naming
the path; the engine's input scan (:mod:`builder.engine.inputs`) and the loaders
(:mod:`builder.data.rows`, :mod:`builder.data.load`) list files with this one function, so what
the scan watches is what the loaders load.

Only ``os`` and ``stat`` are imported: the engine's no-op path uses this module.
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

SKIP_DIRS = frozenset({"__pycache__", ".git", ".cache", ".hypothesis", ".mypy_cache", ".ruff_cache"})
"""Folders no walk enters (tools' caches, the build's own record)."""

SYMLINK = "a symbolic link: inputs must be regular files inside the site root"
SPECIAL = "not a regular file (a pipe, socket or device): inputs must be regular files"
FOLDER = "a folder, not a file"
UNREADABLE = "cannot be read (permission denied)"


class InputError(Exception):
    """A path that is not a readable regular file; :attr:`message` says what it is instead."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class Listing:
    """What :func:`walk` found under a folder, by ``/``-separated key (prefix + relative path)."""

    files: dict[str, os.DirEntry[str]] = field(default_factory=dict)
    """Regular files: key → their entry (``entry.path``; ``entry.stat(follow_symlinks=False)`` is
    the ``lstat`` result, asked for only by those who need it)."""
    refused: dict[str, str] = field(default_factory=dict)
    """Symbolic links and special files: key → why they are refused."""
    folders: list[str] = field(default_factory=list)
    """Keys of the folders entered (each ending in ``/``), the top one excluded."""


def walk(
    folder: str | Path, prefix: str = "", listing: Listing | None = None, skip: frozenset[str] = frozenset()
) -> Listing:
    """Every entry under ``folder`` (which need not exist), never following a symbolic link.

    Keys are ``prefix`` + the path relative to ``folder``; folders in :data:`SKIP_DIRS` are not
    entered, nor those whose key (ending in ``/``) is in ``skip``. Into ``listing`` when given
    (several folders into one listing)."""
    listing = listing if listing is not None else Listing()
    stack = [(prefix, str(folder))]
    while stack:
        key_prefix, path = stack.pop()
        try:
            with os.scandir(path) as scan:
                entries = list(scan)
        except (FileNotFoundError, NotADirectoryError):
            continue
        except PermissionError:
            if key_prefix != prefix:
                listing.refused[key_prefix.rstrip("/")] = UNREADABLE
            continue
        for entry in entries:
            key = key_prefix + entry.name
            try:
                if entry.is_symlink():
                    listing.refused[key] = SYMLINK
                elif entry.is_dir(follow_symlinks=False):
                    if entry.name not in SKIP_DIRS and key + "/" not in skip:
                        listing.folders.append(key + "/")
                        stack.append((key + "/", entry.path))
                elif entry.is_file(follow_symlinks=False):
                    listing.files[key] = entry
                else:
                    listing.refused[key] = SPECIAL
            except FileNotFoundError:
                continue  # removed while walking
    return listing


def refusal(st: os.stat_result) -> str | None:
    """Why the entry of ``lstat`` result ``st`` is refused as an input file, or None (a regular
    file; folders are the caller's business)."""
    if stat.S_ISLNK(st.st_mode):
        return SYMLINK
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    return SPECIAL


def read_regular(path: str | Path, limit: int | None = None) -> bytes:
    """The bytes of the regular file at ``path``.

    Raises :class:`FileNotFoundError` when nothing is there and :class:`InputError` when it is a
    symbolic link, a folder, a special file, unreadable or (with ``limit``) longer than ``limit``
    bytes. The file is opened without following a link and without blocking (a FIFO would wait for
    a writer), and its kind and size are checked before anything is read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        raise
    except PermissionError:
        raise InputError(UNREADABLE) from None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise InputError(SYMLINK) from None
        raise InputError(f"cannot be read ({exc.strerror})") from None
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise InputError(FOLDER)
        if not stat.S_ISREG(st.st_mode):
            raise InputError(SPECIAL)
        size = st.st_size
        if limit is not None and size > limit:
            raise InputError(too_big(size, limit))
        try:
            data = os.read(fd, size + 1)
            while len(data) > size:  # grew since fstat: read to the end
                more = os.read(fd, 1 << 20)
                if not more:
                    break
                data += more
                if limit is not None and len(data) > limit:
                    raise InputError(too_big(len(data), limit))
        except OSError as exc:
            raise InputError(f"cannot be read ({exc.strerror})") from None
        return data
    finally:
        os.close(fd)


def too_big(size: int, limit: int) -> str:
    """The message for a file of ``size`` bytes where at most ``limit`` are taken."""
    return f"{size:,} bytes: such a file is at most {limit:,} bytes"


def readable(path: str) -> bool:
    """Whether this process may read the file at ``path`` (checked when a file is listed, so an
    unreadable file is reported where it is found)."""
    return os.access(path, os.R_OK)


def excerpt(text: str, limit: int = 80) -> str:
    """At most ``limit`` characters of ``text`` (input the builder could not parse, quoted in a
    message), with ``…`` when cut; :class:`builder.errors.Problem` escapes control characters."""
    return text if len(text) <= limit else text[: limit - 1] + "…"
