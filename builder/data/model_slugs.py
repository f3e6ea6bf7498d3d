"""Slugs of the pages that belong to a base model (``meta.model``): its comparison page and its
troubleshooting page. Light on purpose: listing those pages (every build's page jobs, the FAQ)
must not import the comparison machinery (:mod:`builder.site.comparisons`)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from builder.content.markdown import numbered_apart
from builder.content.models import RESERVED_SLUGS

if TYPE_CHECKING:
    from builder.data.load import Site


def model_slug(model: str) -> str:
    """``Qwen/Qwen3.6-35B-A3B`` → ``qwen-qwen3.6-35b-a3b``."""
    return re.sub(r"[^a-z0-9.]+", "-", model.lower()).strip("-.") or "model"


def comparison_slugs(site: Site) -> dict[str, str]:
    """Base model → page slug, for every model with more than one recipe (collisions numbered)."""
    counts: dict[str, int] = defaultdict(int)
    for recipe in site.recipes.values():
        counts[recipe.meta.model] += 1
    return model_slugs(m for m, n in counts.items() if n > 1)


def model_slugs(models: Iterable[str]) -> dict[str, str]:
    """Base model → ``model_slug``, numbered in sorted order where two models share a slug."""
    out: dict[str, str] = {}
    # A page's folder never takes the name of a file the build writes beside it (models/index.html).
    taken: set[str] = set(RESERVED_SLUGS)
    for model in sorted(models):
        out[model] = numbered_apart(model_slug(model), taken)
    return out
