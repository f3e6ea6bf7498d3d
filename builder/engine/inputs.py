"""Every input of a build, by content hash: the first thing an incremental build looks at.

Inputs are the site's ``site.yaml``, ``content/``, ``data/``, the templates in use and the builder's
own code (a change to the code changes every output). Keys are ``/``-separated paths: relative to the
site root for the site's files, ``templates/…`` for the templates wherever they live, and
``@builder/…`` for the package.

A file is *changed* when its content hash differs; ``touch`` changes nothing. Hashing every file
on every build would cost more than a no-op build may take, so a file whose size, mtime, ctime and
inode are all unchanged since the previous scan keeps its digest — unless its mtime is too close to
that scan to tell a later write in the same clock tick apart (git's "racily clean" rule), in which
case it is hashed again.
"""

from __future__ import annotations

import hashlib
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from builder.files import FOLDER, InputError, read_regular, refusal, walk
from builder.limits import ROW_FILE_BYTES

# Not imported from builder.config: the no-op path must not pay for pydantic.
PACKAGE_DIR = Path(__file__).resolve().parent.parent


class Sources(Protocol):
    """Where the inputs are (a :class:`~builder.config.SiteConfig` is one)."""

    @property
    def root(self) -> Path: ...

    @property
    def templates(self) -> Path: ...


StatKey = tuple[int, int, int, int]
"""(size, mtime_ns, ctime_ns, inode)."""

RACY_NS = 2_000_000_000
"""A file modified this close to (or after) the previous scan is hashed again whatever its stat says."""


DIGEST_NAME = "sha256/16"
"""Names :func:`digest_bytes`' function; part of the environment key (change it with the function:
a record whose digests were made otherwise is then not carried over)."""


def digest_bytes(data: bytes) -> bytes:
    """A file's content hash. SHA-256 (cut to 16 bytes), not BLAKE2b: processors with SHA
    instructions (x86 since ~2019, ARMv8 such as the DGX Spark's) hash ≈ 1.9x faster with it
    (here 38 against 71 ms for 50 MB; a row-file build hashes ≈ 50 MB of downloads)."""
    return hashlib.sha256(data).digest()[:16]


@dataclass
class Inputs:
    """Content digests of every input, and what is needed to rescan cheaply."""

    digests: dict[str, bytes] = field(default_factory=dict)
    stats: dict[str, StatKey] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    """Key to absolute path (as a string)."""
    scanned_ns: int = 0
    """Wall-clock time the scan started (only used for the racy-clean rule, never in output)."""

    def changed(self, previous: Inputs | None) -> set[str]:
        """Keys added, removed or with a different digest."""
        if previous is None:
            return set(self.digests)
        before = previous.digests
        return {k for k in self.digests.keys() | before.keys() if self.digests.get(k) != before.get(k)}


def _roots(config: Sources) -> list[tuple[str, Path]]:
    root = config.root
    return [
        ("content/", root / "content"),
        ("data/", root / "data"),
        ("templates/", config.templates),
        ("@builder/", PACKAGE_DIR),
    ]


def _walk(
    prefix: str, folder: Path, found: dict[str, tuple[str, os.stat_result]], refused: dict[str, str]
) -> None:
    listing = walk(folder, prefix)
    for key, entry in listing.files.items():
        if not key.endswith((".pyc", ".pyo")):
            try:
                found[key] = (entry.path, entry.stat(follow_symlinks=False))
            except FileNotFoundError:
                continue  # removed since the walk
    refused.update(listing.refused)


def _refused_digest(reason: str) -> bytes:
    """The digest a refused entry (a link, a special file) stands in the inputs with: its
    appearance or removal is a change, so the load that reports it runs."""
    return digest_bytes(b"\0refused\0" + reason.encode())


def _digest_file(path: str) -> bytes | None:
    """The file's digest, or None when it vanished; a file that is no longer a regular one gets
    the digest of a refused entry."""
    try:
        # no input may be bigger than a row file: a bigger one is refused, not hashed (its load says so)
        return digest_bytes(read_regular(path, ROW_FILE_BYTES))
    except FileNotFoundError:
        return None
    except InputError as exc:
        return _refused_digest(exc.message)


def _stat_key(st: os.stat_result) -> StatKey:
    return (st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def scan_inputs(config: Sources, previous: Inputs | None = None) -> Inputs:
    """Digest every input, rehashing only files whose stat changed since ``previous``.

    Symbolic links and special files are not read: each stands in the inputs with the digest of
    why it is refused (the load reports it)."""
    started = time.time_ns()
    found: dict[str, tuple[str, os.stat_result]] = {}
    refused: dict[str, str] = {}
    site_yaml = config.root / "site.yaml"
    try:
        st = os.lstat(site_yaml)
    except OSError:
        pass
    else:
        if stat.S_ISREG(st.st_mode):
            found["site.yaml"] = (str(site_yaml), st)
        else:
            refused["site.yaml"] = refusal(st) or FOLDER
    for prefix, folder in _roots(config):
        _walk(prefix, folder, found, refused)
    result = Inputs(scanned_ns=started)
    racy_after = (previous.scanned_ns - RACY_NS) if previous else 0
    for key in sorted(found):
        path, st = found[key]
        stat_key = _stat_key(st)
        old = previous.stats.get(key) if previous else None
        if (
            old == stat_key
            and st.st_mtime_ns < racy_after
            and previous is not None
            and key in previous.digests
        ):
            result.digests[key] = previous.digests[key]
        else:
            digest = _digest_file(path)
            if digest is None:
                continue
            result.digests[key] = digest
        result.stats[key] = stat_key
        result.paths[key] = path
    for key, reason in refused.items():
        result.digests[key] = _refused_digest(reason)
    return result


def key_of(config: Sources, path: Path) -> str | None:
    """The input key of an absolute path, or None when it is not an input."""
    path = Path(os.path.abspath(path))
    if path == config.root / "site.yaml":
        return "site.yaml"
    for prefix, folder in _roots(config):
        try:
            rel = path.relative_to(folder)
        except ValueError:
            continue
        return prefix + rel.as_posix() if rel.parts else prefix
    return None


def rescan_paths(config: Sources, previous: Inputs, paths: set[Path]) -> Inputs | None:
    """Update ``previous`` for the given changed paths only (the watcher saw them change).

    Returns None when a path is outside the inputs' folders in a way this cannot follow (a whole
    input folder created or removed): the caller then scans everything.
    """
    result = Inputs(dict(previous.digests), dict(previous.stats), dict(previous.paths), time.time_ns())
    for path in paths:
        key = key_of(config, path)
        if key is None:
            continue
        try:
            st = os.lstat(path)
        except OSError:
            st = None
        if key.endswith("/") or st is None or stat.S_ISDIR(st.st_mode):
            # A folder appeared, vanished or was renamed, or a file vanished: rescan under it.
            prefix = key if key.endswith("/") else key + "/"
            for old in [k for k in result.digests if k == key or k.startswith(prefix)]:
                del result.digests[old]
                result.stats.pop(old, None)
                result.paths.pop(old, None)
            if st is not None and stat.S_ISDIR(st.st_mode):
                found: dict[str, tuple[str, os.stat_result]] = {}
                refused: dict[str, str] = {}
                _walk(prefix, path, found, refused)
                for sub, (abs_path, sub_st) in found.items():
                    digest = _digest_file(abs_path)
                    if digest is None:
                        continue
                    result.digests[sub] = digest
                    result.stats[sub] = _stat_key(sub_st)
                    result.paths[sub] = abs_path
                for sub, reason in refused.items():
                    result.digests[sub] = _refused_digest(reason)
            continue
        result.stats.pop(key, None)
        result.paths.pop(key, None)
        if not stat.S_ISREG(st.st_mode):
            result.digests[key] = _refused_digest(refusal(st) or FOLDER)
            continue
        digest = _digest_file(str(path))
        if digest is None:
            result.digests.pop(key, None)
            continue
        result.digests[key] = digest
        result.stats[key] = _stat_key(st)
        result.paths[key] = str(path)
    return result
