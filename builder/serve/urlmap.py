"""How the preview server maps a request onto its output folder, and whom it answers.

Pure functions over paths and header values, so traversal and Host-header cases are tested without
a socket: a request path is split *before* it is percent-decoded, ``.``/``..`` are refused in any
spelling, and the file finally served must lie inside the output folder once every symlink is
resolved. A ``Host`` header must name the served host, so a DNS-rebinding page cannot read it.
"""

from __future__ import annotations

import ipaddress
import mimetypes
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from http import HTTPStatus
from pathlib import Path
from urllib.parse import quote, unquote

# --- Host header ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class HostCheck:
    """Which ``Host`` headers name this server. Anything else may be a DNS-rebinding page."""

    names: frozenset[str]
    port: int
    any_ip: bool = False
    """Bound to every interface: any IP literal is fine (an address cannot be rebound, a name can)."""

    @classmethod
    def for_address(cls, host: str, port: int) -> HostCheck:
        host = host.strip("[]").lower()
        names = {"localhost", "127.0.0.1", "::1"}
        any_ip = host in ("", "0.0.0.0", "::")
        if any_ip:
            names.add(socket.gethostname().lower())
        else:
            names.add(host)
        return cls(frozenset(names), port, any_ip)

    def status(self, values: Sequence[str]) -> int | None:
        """``None`` when the request may be answered, else the status to refuse it with."""
        if len(values) != 1:
            return HTTPStatus.BAD_REQUEST
        value = values[0].strip().lower()
        if value.startswith("["):
            name, sep, rest = value[1:].partition("]")
            if not sep or (rest and not rest.startswith(":")):
                return HTTPStatus.BAD_REQUEST
            port_text = rest[1:]
        else:
            name, _, port_text = value.partition(":")
        if not name:
            return HTTPStatus.BAD_REQUEST
        if port_text:
            if not port_text.isdigit():
                return HTTPStatus.BAD_REQUEST
            port = int(port_text)
        else:
            port = 80
        name = name.rstrip(".")
        if port != self.port:
            return HTTPStatus.MISDIRECTED_REQUEST
        if name in self.names:
            return None
        if self.any_ip and _is_ip(name):
            return None
        return HTTPStatus.MISDIRECTED_REQUEST


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


# --- Paths ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Resolved:
    """How a request path maps onto the output folder."""

    file: Path | None = None
    """The file to send, inside the output folder."""
    redirect: str | None = None
    """A folder asked for without its trailing slash: where to send the browser."""
    key: str | None = None
    """The output path (``recipes/x/index.html``) the request names, found or not, for live reload."""


def url_parts(url_path: str) -> list[str] | None:
    """Decoded path segments, or ``None`` when the path tries to leave its folder or is not UTF-8.

    Segments are split *before* decoding, so ``%2f`` never becomes a separator, and ``.``/``..``
    are refused in any spelling.
    """
    parts: list[str] = []
    for raw in url_path.split("/")[1:]:
        if not raw:
            continue
        try:
            seg = unquote(raw, encoding="utf-8", errors="strict")
        except UnicodeDecodeError:
            return None
        if seg in (".", "..") or any(c in seg for c in "/\\\0"):
            return None
        parts.append(seg)
    return parts


def page_key(parts: Sequence[str], trailing_slash: bool) -> str:
    rel = "/".join(parts)
    if not parts or trailing_slash:
        return f"{rel}/index.html".lstrip("/")
    return rel


def _inside(path: Path, base: Path) -> bool:
    return path == base or base in path.parents


def resolve(out: Path, url_path: str) -> Resolved:
    """Map ``url_path`` (still percent-encoded, no query) onto a file in ``out``, never outside it."""
    parts = url_parts(url_path)
    if parts is None or not url_path.startswith("/"):
        return Resolved()
    trailing = url_path.endswith("/")
    key = page_key(parts, trailing)
    try:
        base = out.resolve(strict=True)
        real = base.joinpath(*parts).resolve(strict=True)
    except (OSError, RuntimeError):  # missing, a symlink loop, a name too long
        return Resolved(key=key)
    if not _inside(real, base):
        return Resolved(key=key)
    if real.is_dir():
        if parts and not trailing:
            location = "/" + "/".join(quote(p) for p in parts) + "/"
            return Resolved(redirect=location, key=f"{key}/index.html")
        try:
            real = (real / "index.html").resolve(strict=True)
        except (OSError, RuntimeError):
            return Resolved(key=key)
        if not _inside(real, base):
            return Resolved(key=key)
    if not real.is_file() or trailing and real.name != "index.html":
        return Resolved(key=key)
    return Resolved(file=real, key=key)


def inject(page: bytes, tag: bytes) -> bytes:
    """Insert ``tag`` before the last ``</body>`` (or at the end)."""
    at = page.lower().rfind(b"</body>")
    return page + tag if at < 0 else page[:at] + tag + page[at:]


FALLBACK_404 = (
    b'<!doctype html><html lang="en"><head><meta charset="utf-8"><title>Not found</title></head>'
    b"<body><h1>Not found</h1><p>Nothing is built at this address (yet).</p></body></html>"
)

_TEXT_TYPES = ("text/", "application/json", "application/xml", "application/javascript", "image/svg+xml")


def content_type(path: Path) -> str:
    kind = mimetypes.guess_type(path.name)[0] or "application/octet-stream"
    if path.suffix in (".xml", ".rss", ".atom") and kind == "application/octet-stream":
        kind = "application/xml"
    if kind.startswith(_TEXT_TYPES):
        kind += "; charset=utf-8"
    return kind
