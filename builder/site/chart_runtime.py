"""The chart runtime: vega, vega-lite and vega-embed in one script served by the site itself.

vl-convert-python bundles the three libraries (and their dependencies) into one JavaScript file, with
no request to any other host. Bundling takes seconds, so the result is cached under the site's
cache folder (and a per-user copy every site root shares), keyed by the vl-convert and Altair
versions (Altair's Vega-Lite version decides which Vega-Lite the bundle must carry): a build reads
the cached file instead of bundling again.
"""

from __future__ import annotations

import functools
import os
import re
import sys
import tempfile
from pathlib import Path

from builder.errors import ChartRuntimeError

RUNTIME_ASSET = "vega-runtime.js"
"""Logical asset name of the bundle (content-hashed on output like every static file)."""


@functools.cache
def installed_version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (as pip names it), None when it is not installed.

    Read from the name of its ``.dist-info`` folder on ``sys.path`` (where wheels put it, the name
    normalised as wheels normalise it); ``importlib.metadata`` only when there is none (an egg or
    a source checkout). ``importlib.metadata.version`` scans every installed distribution on each
    call, and every build asks for two versions.
    """
    wanted = _normalised(distribution)
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for name in names:
            # <name>-<version>.dist-info, the name's own dashes written as underscores
            if name.endswith(".dist-info") and "-" in name:
                found, _, version = name[: -len(".dist-info")].partition("-")
                if _normalised(found) == wanted:
                    return version
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


def _normalised(name: str) -> str:
    """A distribution name as PEP 503 compares names (runs of ``-_.`` alike, any case)."""
    return re.sub(r"[-_.]+", "_", name).lower()


def _versions() -> tuple[str, str]:
    vlc, altair = installed_version("vl-convert-python"), installed_version("altair")
    if vlc is None or altair is None:
        missing = "vl-convert-python" if vlc is None else "altair"
        raise ChartRuntimeError(f"charts need the {missing} package: pip install vl-convert-python altair")
    return vlc, altair


def cache_path(cache_dir: Path) -> Path:
    vlc, altair = _versions()
    key = re.sub(r"[^A-Za-z0-9.]+", "_", f"vlc{vlc}-altair{altair}")
    return cache_dir / "charts" / f"vega-runtime-{key}.js"


def user_cache_dir() -> Path:
    """The per-user cache (``$XDG_CACHE_HOME`` or ``~/.cache``): the bundle does not depend on the site,
    so every site root (and every test site) on the machine can share one copy."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "llm-recipes-builder"


def _bundle() -> str:
    import altair
    import vl_convert

    match = re.match(r"v?(\d+\.\d+)", altair.SCHEMA_VERSION)
    vl_version = match.group(1) if match else ""
    if vl_version not in vl_convert.get_vegalite_versions():
        vlc, altair_version = _versions()
        raise ChartRuntimeError(
            f"vl-convert {vlc} cannot bundle Vega-Lite {vl_version}, which Altair "
            f"{altair_version} writes; upgrade vl-convert-python"
        )
    try:
        # Only vegaEmbed becomes a global; the loader needs nothing else.
        text: str = vl_convert.javascript_bundle("window.vegaEmbed = vegaEmbed;", vl_version=vl_version)
    except Exception as exc:  # vl-convert raises plain ValueError/RuntimeError from Rust
        raise ChartRuntimeError(f"bundling the chart runtime failed: {exc}") from None
    # The bundle is an ES module body without imports; a function scope keeps its top-level names
    # out of the page's global scope, so it runs as a classic script (also from file://).
    return f"/* vega {vl_convert.get_vega_version()}, vega-lite {vl_version}, vega-embed {vl_convert.get_vega_embed_version()} */\n(function(){{\n{text}\n}})();\n"


def runtime_bundle(cache_dir: Path, shared_cache: Path | None = None) -> bytes:
    """The bundle's bytes: from the site's cache, else the shared one, else bundled once and cached
    in both."""
    paths = [cache_path(cache_dir)] + ([cache_path(shared_cache)] if shared_cache is not None else [])
    data: bytes | None = None
    for path in paths:
        try:
            data = path.read_bytes()
            break
        except OSError:
            continue
    if data is None:
        data = _bundle().encode("utf-8")
    for path in paths:
        if not path.is_file():
            _store(path, data)
    return data


def _store(path: Path, data: bytes) -> None:
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # Written beside and renamed, so a concurrent build never reads half a file.
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".vega-runtime-", suffix=".tmp")
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except OSError:
        # A read-only cache only costs the next build the bundling time.
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
