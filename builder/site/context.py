"""What the page renderers share: the render context, its hashed assets, and what a page job is.

The page modules (recipes' in :mod:`builder.site.render`, the FAQ's, the indexes', the findings',
the downloads', search's) take a :class:`RenderContext` and give :data:`PageJob` values;
:mod:`builder.site.render` builds the context and lists every page.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import jinja2

from builder.analysis.reconcile import Reconciliation
from builder.content.markdown import Markdown
from builder.data.load import Site
from builder.errors import TemplateError
from builder.site.charts import SpecTemplates

Output = dict[str, bytes]
"""Relative output path → the file's bytes."""

PageJob = tuple[str, Callable[[], bytes]]
"""A page's output path and the function that renders it."""


@dataclass(frozen=True)
class ContentSummary:
    """What page jobs must know of every content body, as one small value (worked out by
    :func:`builder.site.content_summary.summarize`)."""

    search_fallback: str
    """Path of the file-system fallback script (named by its records' hash)."""
    search_shards: tuple[str, ...]
    """Pagefind bundle folders besides ``pagefind/``, in shard order (``pagefind-shards/3/``)."""
    faq_count: int
    """Troubleshooting questions over all recipes."""
    faq_models: dict[str, str]
    """Base model → hash of its questions (their recipe, question, anchor and answer, in order), for
    the models with at least one question, sorted."""
    faq_digest: str
    """Hash of every question in order."""


@dataclass
class Assets:
    """Static files with content-hashed names, so they can be cached forever."""

    urls: dict[str, str] = field(default_factory=dict)
    files: Output = field(default_factory=dict)

    @classmethod
    def collect(cls, static_dir: Path) -> Assets:
        assets = cls()
        if not static_dir.is_dir():
            return assets
        for path in sorted(static_dir.rglob("*")):
            if not path.is_file():
                continue
            data = path.read_bytes()
            rel = path.relative_to(static_dir).as_posix()
            stem, dot, suffix = rel.rpartition(".")
            digest = hashlib.sha256(data).hexdigest()[:10]
            hashed = f"static/{stem}.{digest}.{suffix}" if dot else f"static/{rel}.{digest}"
            assets.urls[rel] = hashed
            assets.files[hashed] = data
        return assets

    def add(self, rel: str, data: bytes) -> None:
        """Add a generated file under ``static/`` with a content-hashed name."""
        stem, dot, suffix = rel.rpartition(".")
        digest = hashlib.sha256(data).hexdigest()[:10]
        hashed = f"static/{stem}.{digest}.{suffix}" if dot else f"static/{rel}.{digest}"
        self.urls[rel] = hashed
        self.files[hashed] = data


@dataclass
class RenderContext:
    """What every page renderer needs; built once per build."""

    site: Site
    recon: Reconciliation
    env: jinja2.Environment
    markdown: Markdown
    assets: Assets
    rows: Mapping[str, list[dict[str, Any]]]
    cases_by_recipe: dict[str, list[Any]]
    build_date: dt.date
    comparisons: dict[str, str] = field(default_factory=dict)
    """Base model → slug of its comparison page (models with more than one recipe)."""
    node_hw: dict[str, str] = field(default_factory=dict)
    """Node → hardware id, for the settings of charts and comparisons."""
    specs: SpecTemplates = field(default_factory=SpecTemplates)
    """The charts' spec templates this render built or was given (the environment's ``chart_data``
    uses them)."""

    def page(self, template: str, out_path: str, **values: Any) -> bytes:
        settings = self.site.config.settings
        # Relative links keep the site portable (any host, any sub-path, the file system); the 404
        # page is served at arbitrary depths, so it links from the site's absolute path instead.
        base = urlsplit(settings.base_url).path if out_path == "404.html" else "../" * out_path.count("/")
        canonical_path = out_path[: -len("index.html")] if out_path.endswith("index.html") else out_path
        try:
            html = self.env.get_template(template).render(
                base=base,
                site=settings,
                canonical=settings.base_url + canonical_path,
                asset=lambda name: base + self.assets.urls[name],
                page_path=out_path,
                **values,
            )
        except jinja2.TemplateSyntaxError as exc:
            raise TemplateError(exc.message or "syntax error", self._rel(exc.filename), exc.lineno) from None
        except jinja2.TemplateError as exc:
            raise TemplateError(f"while rendering {out_path}: {exc}", self._rel(template), None) from None
        return html.encode("utf-8")

    def _rel(self, filename: str | None) -> str:
        if not filename:
            return "templates"
        path = Path(filename)
        try:
            return path.relative_to(self.site.config.root).as_posix()
        except ValueError:
            return f"templates/{path.name}"
