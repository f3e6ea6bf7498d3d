"""The search index builds even when the calling thread already runs an event loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

from builder.config import load_config
from builder.pipeline import build
from tests.conftest import MakeSite


def test_build_inside_a_running_event_loop(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    out = tmp_path / "out"

    async def main() -> None:
        build(load_config(root, out))

    asyncio.run(main())
    assert (out / "pagefind").is_dir()
