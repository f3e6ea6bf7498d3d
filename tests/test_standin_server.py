"""bench/standin_server.py: the stand-in the harnesses are run against answers as an OpenAI-compatible
server does, with the token counts and the pace it is set to (the harness fixtures rest on both)."""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "bench"))

import standin_server  # noqa: E402


async def _request(port: int, path: str, body: dict[str, Any] | None = None) -> tuple[str, bytes, float]:
    """(status line, body, seconds to the first data event) of one request on a fresh connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    data = json.dumps(body).encode() if body is not None else b""
    method = "POST" if body is not None else "GET"
    started = time.perf_counter()
    writer.write(
        f"{method} {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(data)}\r\n\r\n".encode()
        + data
    )
    await writer.drain()
    status = (await reader.readline()).decode().strip()
    headers: dict[str, str] = {}
    while (line := await reader.readline()) != b"\r\n":
        name, _, value = line.decode().partition(":")
        headers[name.lower()] = value.strip()
    first = 0.0
    out = b""
    if headers.get("transfer-encoding") == "chunked":
        while size := int((await reader.readline()).strip(), 16):
            chunk = await reader.readexactly(size)
            if not first and b'"content": " tok"' in chunk or b'"text": " tok"' in chunk and not first:
                first = time.perf_counter() - started
            out += chunk
            await reader.readline()
    else:
        out = await reader.readexactly(int(headers["content-length"]))
    writer.close()
    return status, out, first


def _events(body: bytes) -> list[Any]:
    lines = [line.removeprefix(b"data: ") for line in body.split(b"\n\n") if line.startswith(b"data: ")]
    assert lines[-1] == b"[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def test_streams_the_tokens_asked_for_at_the_pace_it_is_set_to() -> None:
    speed = standin_server.Speed(tok_s=200.0, ttft_ms=100.0, ttft_ms_per_prompt_token=1.0)

    async def scenario() -> None:
        ready = asyncio.Event()
        server = asyncio.create_task(standin_server.serve(speed, "127.0.0.1", 0, 30, ready, port_out := []))
        await ready.wait()
        port = port_out[0]
        prompt = " ".join(f"w{i}" for i in range(50))
        status, body, first = await _request(
            port,
            "/v1/chat/completions",
            {
                "messages": [{"role": "user", "content": [{"type": "text", "text": prompt}]}],
                "max_tokens": 5,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        )
        assert status == "HTTP/1.1 200 OK"
        events = _events(body)
        assert (
            "".join(e["choices"][0]["delta"].get("content", "") for e in events if e["choices"]) == " tok" * 5
        )
        assert events[-1]["usage"] == {"prompt_tokens": 50, "completion_tokens": 5, "total_tokens": 55}
        assert first >= 0.150  # 100 ms + 1 ms for each of the 50 prompt words
        status, body, _ = await _request(port, "/v1/completions", {"prompt": "a b c", "max_tokens": 2})
        answer = json.loads(body)
        assert answer["choices"][0]["text"] == " tok tok" and answer["usage"]["prompt_tokens"] == 3
        status, body, _ = await _request(port, "/v1/models")
        assert json.loads(body)["data"][0]["id"] == "standin"
        server.cancel()

    asyncio.run(scenario())


def test_fails_every_nth_request_when_told() -> None:
    speed = standin_server.Speed(tok_s=1000.0, ttft_ms=0.0, ttft_ms_per_prompt_token=0.0, fail_every=2)

    async def scenario() -> list[str]:
        ready = asyncio.Event()
        port_out: list[int] = []
        server = asyncio.create_task(standin_server.serve(speed, "127.0.0.1", 0, 30, ready, port_out))
        await ready.wait()
        statuses = [
            (await _request(port_out[0], "/v1/completions", {"prompt": "a", "max_tokens": 1}))[0]
            for _ in range(4)
        ]
        server.cancel()
        return statuses

    assert asyncio.run(scenario()) == ["HTTP/1.1 200 OK", "HTTP/1.1 500 Internal Server Error"] * 2
