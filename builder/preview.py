"""The build side of the preview: the ``rebuild(changed_paths)`` callable :mod:`builder.devserver` is given.

The preview builds into a folder of its own, ``<root>/.cache/builder/serve-site``, so ``site/`` (what
``build`` publishes) is never touched by ``serve``; the live-reload script is added by the server at
serve time and never written to disk. Every outcome becomes a :class:`RebuildResult`: a problem in
the content, the data, the templates or ``site.yaml`` is a result with problems, never an exception.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from builder.config import SiteConfig, load_config
from builder.devserver import RebuildResult
from builder.errors import BuildAborted, BuilderError
from builder.output import MARKER

SERVE_DIR = Path(".cache") / "builder" / "serve-site"


def serve_out_dir(root: Path) -> Path:
    """Where ``serve`` builds: beside the builder's cache, not ``site/``."""
    return root.resolve() / SERVE_DIR


Digests = dict[str, bytes]


def snapshot(out: Path) -> Digests:
    """``{relative path: digest}`` of every file in ``out`` (empty when it does not exist)."""
    digests: Digests = {}
    for dirpath, _dirs, files in os.walk(out):
        for name in files:
            path = Path(dirpath, name)
            rel = path.relative_to(out).as_posix()
            if rel == MARKER:
                continue
            digests[rel] = hashlib.blake2b(path.read_bytes(), digest_size=16).digest()
    return digests


def changed_files(before: Digests | None, after: Digests) -> frozenset[str] | None:
    """Output paths whose digest differs between two snapshots (``None`` when there is no before)."""
    if before is None:
        return None
    return frozenset(k for k in before.keys() | after.keys() if before.get(k) != after.get(k))


class PreviewBuilder:
    """Builds the site for the preview; call it with the changed source paths.

    The configuration is reloaded on every call (it is one small file), so an edit to ``site.yaml``
    or a site gaining its own ``templates/`` takes effect without a restart.
    """

    def __init__(self, root: Path, out: Path | None = None) -> None:
        self.root = root.resolve()
        self.out = out if out is not None else serve_out_dir(self.root)
        self.config: SiteConfig | None = None
        self._digests: Digests | None = None

    def __call__(self, changed: frozenset[Path] | None) -> RebuildResult:
        from builder.pipeline import build

        try:
            config = load_config(self.root, self.out)
        except BuilderError as exc:
            return RebuildResult(problems=(exc.problem(),))
        self.config = config
        try:
            result = build(config)
        except BuildAborted as exc:
            return RebuildResult(problems=tuple(exc.problems), warnings=tuple(exc.warnings))
        except BuilderError as exc:
            return RebuildResult(problems=(exc.problem(),))
        # A full build rewrites every file: what changed is what differs from the last good build.
        after = snapshot(self.out)
        changed_out = changed_files(self._digests, after)
        self._digests = after
        return RebuildResult(warnings=tuple(result.warnings), changed=changed_out, files=result.files)
