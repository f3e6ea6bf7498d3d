"""The build works even when the calling thread already runs an event loop (an async host)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from builder.config import load_config
from builder.engine.incremental import build
from tests.conftest import MakeSite


def test_build_inside_a_running_event_loop(make_site: MakeSite, tmp_path: Path) -> None:
    root = make_site()
    out = tmp_path / "out"

    async def main() -> None:
        build(load_config(root, out))

    # On a thread of its own, so the test does not depend on what else runs in the test process.
    errors: list[BaseException] = []

    def host() -> None:
        try:
            asyncio.run(main())
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    thread = threading.Thread(target=host)
    thread.start()
    thread.join()
    assert errors == []
    assert (out / "pagefind").is_dir()
