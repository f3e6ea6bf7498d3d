"""The record of the previous build: the cache files, what they hold, and the no-op check.

``state.pickle`` (input and output digests, small: read by every build) is a pickle with a
checksum, written atomically; anything unreadable is :class:`CacheCorrupt` and the build starts
clean.
"""

from __future__ import annotations

import hashlib
import os
import pickle
import sys
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from builder.engine.inputs import DIGEST_NAME, Inputs, Sources
from builder.errors import Problem

if TYPE_CHECKING:
    pass

FORMAT = 8
"""Bumped whenever what the cache files hold changes shape (6: CRC-32 checksums; 7: dependency
digests; 8: the load cache's blobs in a file of their own)."""
MAGIC = b"llm-recipes-builder cache\n"
MARKER = ".llm-recipes-site"  # = builder.engine.output.MARKER, not imported: the no-op path stays light


@dataclass
class BuildReport:
    """What one build did."""

    written: list[str] = field(default_factory=list)
    """Output files added or changed, relative to the output folder, ``/``-separated, sorted."""
    removed: list[str] = field(default_factory=list)
    """Output files that no longer exist, same form, sorted."""
    problems: list[Problem] = field(default_factory=list)
    """Errors that stopped the build; the previous output is untouched when there are any."""
    warnings: list[Problem] = field(default_factory=list)
    """Problems that did not stop it."""
    files: int = 0
    """Files in the published output."""
    rows: int = 0
    """Rows loaded."""
    rendered: int = 0
    """Pages rendered by this build (the others were reused)."""
    reused: int = 0
    """Pages whose previous file was kept."""
    noop: bool = False
    """Nothing changed: no stage beyond the input scan ran."""
    cancelled: bool = False
    """Stopped before writing anything, as its caller asked (the output and record are as they were)."""
    cache_note: str | None = None
    """Why the build cache was discarded, when it was (corrupt, from another version)."""
    seconds: dict[str, float] = field(default_factory=dict)
    """Wall time per stage."""

    @property
    def ok(self) -> bool:
        return not self.problems

    def summary(self) -> str:
        total = sum(self.seconds.values())
        parts = " ".join(f"{name} {secs:.2f}s" for name, secs in self.seconds.items())
        return f"{parts} | total {total:.2f}s"


# --------------------------------------------------------------------------------------------------
# Cache files: pickles with a checksum, written atomically.


class CacheCorrupt(Exception):
    """A cache file exists but cannot be trusted."""


def checksum(data: bytes | memoryview) -> bytes:
    """CRC-32 of a cache file's payload: it detects torn and damaged files (not tampering: whoever can
    write the cache can write a pickle), at ~5x the speed of BLAKE2b (≈ 20 ms against 90 ms for
    the 36 MB of rows an edit build reads)."""
    return zlib.crc32(data).to_bytes(4, "little")


CHECKSUM_SIZE = 4


def write_cache(path: Path, obj: Any) -> bytes:
    """Store ``obj`` at ``path`` (atomically); return its payload's checksum."""
    return write_payload(path, pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL))


def write_payload(path: Path, payload: bytes) -> bytes:
    """Store a pickled payload at ``path`` (atomically); return its checksum."""
    digest = checksum(payload)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(MAGIC + FORMAT.to_bytes(4, "little") + digest)
        handle.write(payload)  # not joined to the header: that copied megabytes
    os.replace(tmp, path)
    return digest


def read_cache(path: Path) -> Any:
    """The object stored at ``path``; None when there is none; :class:`CacheCorrupt` when unreadable."""
    found = read_cache_checked(path)
    return None if found is None else found[0]


HEADER_SIZE = len(MAGIC) + 4 + CHECKSUM_SIZE
"""Magic, format and checksum before a cache file's pickled payload."""

LOAD_BASE, LOAD_BLOBS = "load.pickle", "blobs.pickle"
"""The load cache's files (:mod:`builder.engine.loadstore`)."""
ROWS_TABLE = "rows.arrow"
"""The rows table, Arrow IPC, checked whole."""


def read_cache_checked(path: Path) -> tuple[Any, bytes] | None:
    """:func:`read_cache` with the payload's checksum (what :func:`write_cache` returned)."""
    try:
        data = read_mapped(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise CacheCorrupt(f"cannot read {path.name}: {exc.strerror or type(exc).__name__}") from None
    head = HEADER_SIZE
    with data:
        if len(data) < head or data[: len(MAGIC)] != MAGIC:
            raise CacheCorrupt(f"{path.name} is not a cache file")
        if int.from_bytes(data[len(MAGIC) : len(MAGIC) + 4], "little") != FORMAT:
            raise CacheCorrupt(f"{path.name} is from another version of the builder")
        digest, payload = bytes(data[len(MAGIC) + 4 : head]), data[head:]
        try:
            if checksum(payload) != digest:
                raise CacheCorrupt(f"{path.name} fails its checksum")
            try:
                return pickle.loads(payload), digest
            except Exception as exc:  # a checksum-valid file from a different code shape
                raise CacheCorrupt(f"{path.name} cannot be loaded: {type(exc).__name__}") from None
        finally:
            payload.release()


def read_mapped(path: Path) -> memoryview:
    """The file's bytes, mapped rather than copied into memory (an edit build reads ≈ 50 MB of
    record: copying it cost more than checking it). Release the view (``with``) when done; an
    empty file gives an empty view."""
    import mmap

    with open(path, "rb") as handle:
        size = os.fstat(handle.fileno()).st_size
        if size == 0:
            return memoryview(b"")
        return memoryview(mmap.mmap(handle.fileno(), size, access=mmap.ACCESS_READ))


# --------------------------------------------------------------------------------------------------
# The record of the previous build.

OutStat = tuple[int, int, int]
"""(inode, size, mtime_ns) of a published file; a hard link keeps all three."""


@dataclass
class OutputRecord:
    fingerprint: bytes | None
    """Hash of what the file was made from; None when that is not known (rendered every time)."""
    digest: bytes
    """Hash of the file's bytes."""
    templates: tuple[str, ...]
    """Templates loaded while rendering it."""
    stat: OutStat
    deps: tuple[str, ...] = ()
    """What the page read when it rendered (:mod:`builder.engine.reading`'s keys)."""


@dataclass
class State:
    inputs: Inputs
    environment: bytes
    """Toolchain, build date and everything else global that is not a file."""
    outputs: dict[str, OutputRecord]
    warnings: list[Problem]
    files: int
    rows: int
    out_dir: OutStat | None = None
    glob: bytes = b""
    """The build's :func:`builder.engine.depindex.global_digest`."""
    dep_digests: dict[str, bytes | None] = field(default_factory=dict)
    """:attr:`builder.engine.depindex.DepIndex.digests` of the build."""


def environment_key(config: Sources, source_date_epoch: int | None) -> bytes:
    """Global inputs that are not files: the interpreter, library versions, the build date."""
    import datetime as dt

    if source_date_epoch is not None:
        day = dt.datetime.fromtimestamp(source_date_epoch, tz=dt.UTC).date()
    else:
        day = dt.datetime.now(tz=dt.UTC).date()
    parts = [
        sys.version,
        f"epoch={source_date_epoch}",
        f"day={day.isoformat()}",
        str(config.templates),
        # Digests of unchanged files are carried from the record: only while made the same way.
        f"digest={DIGEST_NAME}",
    ]
    wanted = (
        "duckdb",
        "pyarrow",
        "jinja2",
        "markdown_it_py",
        "mdit_py_plugins",
        "markupsafe",
        "altair",
        "vl_convert_python",
        "pydantic",
        "pydantic_core",
        "pagefind",
        "pyyaml",
        "numpy",
        "orjson",
    )
    # Installed versions, from the names of their dist-info folders (importing them would cost the
    # no-op build its budget). Only package folders count: the current directory is on sys.path too.
    for folder in sys.path:
        if not folder.endswith(("site-packages", "dist-packages")):
            continue
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        parts.extend(
            name
            for name in sorted(names)
            if name.endswith(".dist-info") and name.lower().replace("-", "_").startswith(wanted)
        )
    return hashlib.blake2b("\n".join(parts).encode(), digest_size=16).digest()


def _source_date_epoch() -> int | None:
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    return int(epoch) if epoch and epoch.isdigit() else None


def _walk_output(out: Path) -> dict[str, OutStat]:
    found: dict[str, OutStat] = {}
    stack = [("", str(out))]
    while stack:
        prefix, path = stack.pop()
        try:
            entries = list(os.scandir(path))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                stack.append((f"{prefix}{entry.name}/", entry.path))
            else:
                try:
                    st = entry.stat(follow_symlinks=False)
                except OSError:
                    continue
                found[prefix + entry.name] = (st.st_ino, st.st_size, st.st_mtime_ns)
    found.pop(MARKER, None)
    return found


def dir_stat(path: Path) -> OutStat | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_dev, 0)


def state_dir(root: Path, out: Path) -> Path:
    key = hashlib.blake2b(str(out).encode(), digest_size=8).hexdigest()
    return root / ".cache" / "builder" / "incremental" / key


def output_changes(out: Path, state: State) -> tuple[set[str], set[str]]:
    """(damaged: recorded files missing or modified, extra: files nobody recorded)."""
    if dir_stat(out) != state.out_dir or not (out / MARKER).is_file():
        return set(state.outputs) or {MARKER}, set()
    found = _walk_output(out)
    damaged = {rel for rel, rec in state.outputs.items() if found.get(rel) != rec.stat}
    extra = set(found) - set(state.outputs)
    return damaged, extra
