"""Pagefind's service mode, spoken directly: pages in, index files out, nothing on disk.

``pagefind --service`` reads requests on stdin and answers on stdout, each message a base64-encoded
JSON object followed by a comma (the protocol of the ``pagefind`` Python package). For each page set
we open an index (``NewIndex``), send its pages as HTML (``AddFile``: parsed exactly as the command
line parses files) and ask for the bundle (``GetFiles``), which comes back inside the answer.

Compared with running the command line once per set over a scratch folder, nothing is written
(the command line writes one file per page, and creating thousands of files is a good part of its
time), and one process indexes many sets in turn. We do not use the package's asyncio client: it
polls for answers on a timer, and terminates the binary as soon as the last answer arrives.
Answers come in request order; the binary exits when its stdin closes.
"""

from __future__ import annotations

import base64
import importlib
import json
import os
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from builder.errors import SearchIndexError

Pages = Mapping[str, bytes]
"""Page path (``records/x.html``, it names the result's URL) → HTML."""
Bundle = dict[str, bytes]
"""Bundle file path (``pagefind.js``, ``index/…``) → bytes."""


@dataclass(frozen=True)
class IndexOptions:
    """What the command line takes as ``--root-selector``, ``--exclude-selectors``, ``--force-language``."""

    root_selector: str
    exclude_selectors: tuple[str, ...]
    force_language: str

    def as_config(self) -> dict[str, Any]:
        return {
            "root_selector": self.root_selector,
            "exclude_selectors": list(self.exclude_selectors),
            "force_language": self.force_language,
        }


def executable() -> Path:
    """The Pagefind binary, found as the ``pagefind`` package finds it (``PAGEFIND_BINARY_PATH``, the
    ``extended`` build, the plain one, then ``PATH``) without importing that package's asyncio client."""
    configured = os.environ.get("PAGEFIND_BINARY_PATH")
    if configured:
        return Path(configured)
    for package in ("pagefind_bin_extended", "pagefind_bin"):
        try:
            module = importlib.import_module(package)
        except ImportError:
            continue
        try:
            return Path(module.get_executable())
        except FileNotFoundError:
            continue
    for name in ("pagefind_extended", "pagefind"):
        found = shutil.which(name)
        if found:
            return Path(found)
    raise SearchIndexError("cannot run Pagefind: no Pagefind binary found (install pagefind[extended])")


def index_sets(
    sets: Mapping[str, Pages],
    options: IndexOptions,
    processes: int = 2,
    keep: Callable[[str], bool] = lambda path: True,
) -> dict[str, Bundle]:
    """One bundle per page set, ``{set name: bundle}``; up to ``processes`` Pagefind processes at once.

    Each set is its own index, so a bundle depends only on its pages (and the Pagefind version),
    not on which process made it or what it made before. Only files whose path ``keep`` accepts
    are decoded and returned (Pagefind always sends its UI scripts too).
    """
    if not sets:
        return {}
    binary = executable()
    # Larger sets first, each to the least loaded process: the processes finish close together.
    shares: list[list[str]] = [[] for _ in range(max(1, min(processes, len(sets))))]
    loads = [0] * len(shares)
    for name in sorted(sets, key=lambda n: (-sum(len(p) for p in sets[n].values()), n)):
        lightest = loads.index(min(loads))
        shares[lightest].append(name)
        loads[lightest] += sum(len(p) for p in sets[name].values())
    if len(shares) == 1:
        return _index_in_one_process(binary, sets, shares[0], options, keep)
    bundles: dict[str, Bundle] = {}
    with ThreadPoolExecutor(max_workers=len(shares), thread_name_prefix="pagefind") as pool:
        for done in pool.map(lambda share: _index_in_one_process(binary, sets, share, options, keep), shares):
            bundles.update(done)
    return bundles


def _index_in_one_process(
    binary: Path,
    sets: Mapping[str, Pages],
    names: Sequence[str],
    options: IndexOptions,
    keep: Callable[[str], bool],
) -> dict[str, Bundle]:
    with _Service(binary) as service:
        out: dict[str, Bundle] = {}
        for name in names:
            (created,) = service.ask([{"type": "NewIndex", "config": options.as_config()}])
            index = created["index_id"]
            pages = sets[name]
            requests: list[dict[str, Any]] = [
                {"type": "AddFile", "index_id": index, "file_path": path, "url": None, "file_contents": html}
                for path, html in ((p, pages[p].decode("utf-8")) for p in sorted(pages))
            ]
            requests.append({"type": "GetFiles", "index_id": index})
            answers = service.ask(requests)
            out[name] = {
                item["path"]: base64.b64decode(item["content"])
                for item in answers[-1]["files"]
                if keep(item["path"])
            }
            service.ask([{"type": "DeleteIndex", "index_id": index}])
        return out


class _Service:
    """One ``pagefind --service`` process: requests written by a helper thread, answers read here.

    Writing everything before reading would deadlock once the answers fill the pipe, so the
    requests are written from another thread while this one reads.
    """

    def __init__(self, binary: Path) -> None:
        self._errors: IO[bytes] = tempfile.TemporaryFile()
        try:
            self._proc = subprocess.Popen(
                [str(binary), "--service"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._errors
            )
        except OSError as exc:
            self._errors.close()
            raise SearchIndexError(f"cannot run Pagefind: {exc.strerror}") from None
        self._buffer = bytearray()
        self._next_id = 0

    def __enter__(self) -> _Service:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close(failed=exc[0] is not None)

    def ask(self, payloads: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """Send ``payloads``; return their answers' payloads in order, or raise on any error."""
        first = self._next_id + 1
        self._next_id += len(payloads)
        data = b"".join(
            base64.b64encode(json.dumps({"message_id": first + n, "payload": p}).encode()) + b","
            for n, p in enumerate(payloads)
        )
        broken: list[OSError] = []

        def write() -> None:
            stdin = self._proc.stdin
            assert stdin is not None
            try:
                stdin.write(data)
                stdin.flush()
            except OSError as exc:  # the process died; the reader reports it
                broken.append(exc)

        writer = threading.Thread(target=write, name="pagefind-requests", daemon=True)
        writer.start()
        try:
            answers = [self._answer(first + n) for n in range(len(payloads))]
        finally:
            writer.join()
        return answers

    def _answer(self, expected: int) -> dict[str, Any]:
        stdout = self._proc.stdout
        assert stdout is not None
        scanned = 0  # a big answer arrives in many pieces: look for the comma in the new ones only
        while (end := self._buffer.find(b",", scanned)) < 0:
            scanned = len(self._buffer)
            chunk = os.read(stdout.fileno(), 1 << 20)
            if not chunk:
                raise SearchIndexError(f"Pagefind stopped before answering{self._stderr()}")
            self._buffer += chunk
        message = json.loads(base64.b64decode(bytes(self._buffer[:end])))
        del self._buffer[: end + 1]
        payload: dict[str, Any] = message.get("payload") or {}
        if payload.get("type") == "Error":
            raise SearchIndexError(f"Pagefind refused a request: {str(payload.get('message'))[:300]}")
        if message.get("message_id") != expected:
            raise SearchIndexError(f"Pagefind answered message {message.get('message_id')}, not {expected}")
        return payload

    def _stderr(self) -> str:
        self._errors.seek(0)
        text = self._errors.read().decode(errors="replace").strip()
        return f": {text[-300:]}" if text else ""

    def close(self, failed: bool = False) -> None:
        """Close stdin (the service exits when it ends) and wait; kill it when closing after an error."""
        try:
            assert self._proc.stdin is not None
            self._proc.stdin.close()
        except OSError:
            pass
        if failed:
            self._proc.kill()
        code = self._proc.wait()
        assert self._proc.stdout is not None
        self._proc.stdout.close()
        try:
            if code != 0 and not failed:
                raise SearchIndexError(f"Pagefind exited with status {code}{self._stderr()}")
        finally:
            self._errors.close()
