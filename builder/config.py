"""Where a site lives and how it is built: one explicit object passed to every stage."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, StringConstraints, ValidationError

from builder.errors import ConfigError
from builder.files import InputError, read_regular
from builder.limits import CONTENT_FILE_BYTES
from builder.yamlio import YamlProblem, load_yaml

PACKAGE_DIR = Path(__file__).resolve().parent

URL_SCHEMES = ("https", "http")
"""The schemes a link from content or configuration may have; a link without one is relative."""
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
_URL_SPACE_RE = re.compile(r"[\s\x00-\x1f\x7f]")


def url_problem(url: str) -> str | None:
    """Why ``url`` may not be a link on the site, or None: its scheme must be one of
    :data:`URL_SCHEMES` (or none: relative). Spaces and control characters are refused as well,
    since browsers drop them (``java\\nscript:`` is ``javascript:`` to a browser)."""
    if _URL_SPACE_RE.search(url):
        return "a link may not hold spaces or control characters"
    scheme = _SCHEME_RE.match(url)
    if scheme is not None and scheme.group()[:-1].lower() not in URL_SCHEMES:
        return f"links are https, http or relative, not '{scheme.group()[:20]}'"
    return None


def _link(url: str) -> str:
    problem = url_problem(url)
    if problem is not None:
        raise ValueError(problem)
    return url


Link = Annotated[str, AfterValidator(_link)]
"""A URL a page links to: https, http or relative (:func:`url_problem`)."""


class SiteSettings(BaseModel):
    """Optional ``site.yaml`` at the site root."""

    model_config = ConfigDict(
        extra="forbid", frozen=True, strict=True, defer_build=True
    )  # field docstrings become descriptions where read: builder.content.docstrings.described()

    title: str = "LLM Serving Recipes"
    """Site name shown in the header, titles and feeds."""
    description: str = (
        "How to serve open-weights models on your own GPU: checkpoints, flags and dated benchmark rows "
        "that anyone can trace and re-run."
    )
    """Default meta description."""
    base_url: Annotated[str, StringConstraints(pattern=r"^https?://[^\s]+/$")] = "https://example.org/"
    """Absolute URL the site is published under, ending in ``/``; used for canonical URLs, feeds, sitemap."""
    repository_url: Link | None = None
    """Where contributors send pull requests (shown in the footer and on the API page)."""


def default_templates_dir() -> Path:
    """The repository's ``templates/`` next to the package, or the copy installed inside it."""
    beside = PACKAGE_DIR.parent / "templates"
    if (beside / "base.html").is_file():
        return beside
    return PACKAGE_DIR / "_templates"


@dataclass(frozen=True)
class SiteConfig:
    """Everything a build needs to know that is not content or data."""

    root: Path
    out: Path
    templates: Path
    settings: SiteSettings = field(default_factory=SiteSettings)
    source_date_epoch: int | None = None
    """Honoured for reproducible timestamps (feeds' ``updated`` when nothing is dated)."""
    verbose: bool = False

    @property
    def cache_dir(self) -> Path:
        return self.root / ".cache" / "builder"


def load_config(root: str | Path, out: str | Path | None = None, *, verbose: bool = False) -> SiteConfig:
    root_path = Path(root).resolve()
    if not root_path.is_dir():
        raise ConfigError(f"site root '{root}' is not a folder")
    if not (root_path / "content").is_dir() and not (root_path / "data").is_dir():
        raise ConfigError(f"'{root}' holds neither content/ nor data/: is --root right?", root_path)
    settings = SiteSettings()
    site_yaml = root_path / "site.yaml"
    try:
        data: bytes | None = read_regular(site_yaml, CONTENT_FILE_BYTES)
    except FileNotFoundError:
        data = None
    except InputError as exc:
        raise ConfigError(exc.message, "site.yaml") from None
    if data is not None:
        try:
            doc = load_yaml(data.decode("utf-8"))
        except UnicodeDecodeError as exc:
            line = data.count(b"\n", 0, exc.start) + 1
            raise ConfigError(
                f"not valid UTF-8 (byte 0x{data[exc.start]:02x}); save the file as UTF-8", "site.yaml", line
            ) from None
        except YamlProblem as exc:
            raise ConfigError(exc.message, "site.yaml", exc.line) from None
        if doc.duplicates:
            raise ConfigError(doc.duplicates[0].message, "site.yaml", doc.duplicates[0].line)
        try:
            settings = SiteSettings.model_validate(doc.value or {})
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = tuple(first["loc"])
            raise ConfigError(
                f"{'.'.join(map(str, loc))}: {first['msg']}", "site.yaml", doc.line_of(loc)
            ) from None
    templates = root_path / "templates"
    if not (templates / "base.html").is_file():
        templates = default_templates_dir()
    epoch = os.environ.get("SOURCE_DATE_EPOCH")
    return SiteConfig(
        root=root_path,
        out=Path(out).resolve() if out is not None else root_path / "site",
        templates=templates,
        settings=settings,
        source_date_epoch=int(epoch) if epoch and epoch.isdigit() else None,
        verbose=verbose,
    )
