"""The last step of a build: which output files are written, linked or removed, and doing it.

A page the build rendered again, or a file an output stage made again, whose bytes equal the
published one is linked into the new tree, not written: the report lists only files whose bytes
changed, and their records keep the published file's inode. :func:`plan` decides; :func:`apply`
publishes (atomically, or in place for the preview) and records the new files' inodes.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from builder.engine.build_state import OutputRecord
from builder.engine.depindex import KEPT
from builder.engine.inputs import digest_bytes


@dataclass
class Fresh:
    """What a build produced this time, by output path."""

    files: dict[str, bytes] = field(default_factory=dict)
    """Bytes of every page rendered and every file an output stage made (or ``KEPT``: a stage's
    file as the previous build recorded it)."""
    digests: dict[str, bytes] = field(default_factory=dict)
    """Digests of rendered pages (hashed by the render workers)."""
    fingerprints: dict[str, bytes | None] = field(default_factory=dict)
    """Fingerprints of rendered pages (None: the page declares nothing and always renders)."""
    templates: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Templates each rendered page loaded."""
    deps: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Dependencies each rendered page declared."""


@dataclass
class Plan:
    write: dict[str, bytes]
    """Files whose bytes are new."""
    link: dict[str, str]
    """Output path → the published file it is linked from."""
    removed: list[str]
    """Published files no longer produced, sorted."""
    records: dict[str, OutputRecord]
    """The record of every output file after publishing (inodes of written files filled in by
    :func:`apply`)."""


def plan(
    fresh: Fresh,
    kept: Mapping[str, OutputRecord],
    previous: Mapping[str, OutputRecord],
    damaged: set[str],
    out_prefix: str,
) -> Plan:
    """``kept``: pages not rendered (their published files stay); ``previous``: the last build's
    records; ``damaged``: published files that no longer match their records (always written)."""
    link = {path: out_prefix + path for path in kept}
    write: dict[str, bytes] = {}
    records: dict[str, OutputRecord] = dict(kept)
    for path, data in fresh.files.items():
        old = previous.get(path)
        if data is KEPT:
            assert old is not None  # the memo only hands back files the previous build recorded
            link[path] = out_prefix + path
            records[path] = old
            continue
        digest = fresh.digests.get(path) or digest_bytes(data)
        same = old is not None and old.digest == digest and path not in damaged
        if same:
            link[path] = out_prefix + path
        else:
            write[path] = data
        records[path] = OutputRecord(
            fresh.fingerprints.get(path),
            digest,
            fresh.templates.get(path, ()),
            old.stat if same and old is not None else (0, 0, 0),
            fresh.deps.get(path, ()),
        )
    return Plan(write, link, sorted(set(previous) - set(records)), records)


def apply(
    plan: Plan,
    out: Path,
    root: Path,
    *,
    in_place: bool,
    tree_changed: bool,
    trash: Path,
    spare: Path | None,
) -> None:
    """Publish ``plan`` into ``out``: file by file when ``in_place`` (the preview), else by swapping
    in a new tree. Nothing is published when nothing changed, unless ``tree_changed`` (a
    first build, or a published tree that was tampered with)."""
    from builder.engine.output import publish, remove_leftovers, update_in_place

    write, records = plan.write, plan.records
    if in_place and (write or plan.removed):
        update_in_place(write, plan.removed, out, root)
    elif not in_place and (write or plan.removed or tree_changed):
        inodes = {path: records[path].stat[0] for path in plan.link}
        publish(write, out, root, reuse=plan.link, trash=trash, spare=spare, inodes=inodes)
    else:
        remove_leftovers(out)
        return
    for path in write:
        st = os.stat(out / path)
        records[path].stat = (st.st_ino, st.st_size, st.st_mtime_ns)
