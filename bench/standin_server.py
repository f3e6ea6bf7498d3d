"""A stand-in OpenAI-compatible server whose speed is set, for running benchmark harnesses against.

It serves ``POST /v1/chat/completions`` and ``POST /v1/completions`` (streamed as server-sent events when
``"stream": true``, else one JSON answer), ``GET /v1/models``, ``GET /health`` and ``GET /corpus.txt``
(words ``w0`` … of bench/harness/make_tokenizer.py's vocabulary, for a harness that wants a book to cut
prompts from). Every request gets
exactly ``max_tokens`` (or ``max_completion_tokens``) output tokens, default 16; each token is one word
(`` tok``), so a whitespace tokenizer counts what a harness reads. Timing, per request and independent
of the others (no batching, no queue):

- the first token comes ``--ttft-ms`` + ``--ttft-ms-per-prompt-token`` × prompt tokens after the request
  (prompt tokens = the whitespace-separated words of the prompt or of the messages' text);
- every later token ``1000 / --tok-s`` ms after the one before (counted from when the first token was
  sent, so a first token the machine sent late shortens no gap after it).

So a harness should measure TTFT = 50 + 0.1 × prompt tokens ms, ITL = TPOT = 25 ms and a per-stream
decode of 40 tok/s with the defaults. ``usage`` is sent when asked (``stream_options.include_usage``)
and always in a non-streamed answer.

Run: ``python bench/standin_server.py --port 0`` prints ``listening on http://127.0.0.1:PORT`` once it
accepts connections; it stops on SIGTERM/SIGINT or after ``--max-seconds``. Standard library only, so
any harness's venv (or none) can run it.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import signal
import sys
import time
import uuid
from dataclasses import dataclass
from typing import Any

TOKEN = " tok"
CORPUS_WORDS = 50_000
VOCAB_WORDS = 4094
"""The ``w<i>`` words of the stand-in tokenizer's vocabulary (bench/harness/make_tokenizer.py)."""


def corpus() -> bytes:
    """A fixed text of vocabulary words, in lines of 16 (a linear congruential order, no randomness)."""
    words = [f"w{(i * 7919 + 13) % VOCAB_WORDS}" for i in range(CORPUS_WORDS)]
    return "\n".join(" ".join(words[i : i + 16]) for i in range(0, len(words), 16)).encode() + b"\n"


@dataclass(frozen=True)
class Speed:
    """What the stand-in is set to."""

    tok_s: float = 40.0
    """Output tokens per second of one stream, after the first."""
    ttft_ms: float = 50.0
    """Time to the first token of an empty prompt, ms."""
    ttft_ms_per_prompt_token: float = 0.1
    """Added to the time to first token per prompt token, ms."""
    model: str = "standin"
    """The model id it answers to (any is accepted; this one is listed)."""
    fail_every: int = 0
    """Answer every n-th generation request with HTTP 500 (0: none), to record failed requests."""

    def ttft_s(self, prompt_tokens: int) -> float:
        return (self.ttft_ms + self.ttft_ms_per_prompt_token * prompt_tokens) / 1000

    @property
    def itl_s(self) -> float:
        return 1 / self.tok_s


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return ""


def prompt_tokens(body: dict[str, Any]) -> int:
    """The whitespace-separated words of a completions ``prompt`` or of the chat ``messages``."""
    if "messages" in body:
        messages = body["messages"] if isinstance(body["messages"], list) else []
        return sum(len(_text_of(m.get("content")).split()) for m in messages if isinstance(m, dict))
    prompt = body.get("prompt", "")
    if isinstance(prompt, list):  # token ids, or a batch of one string
        if prompt and all(isinstance(p, int) for p in prompt):
            return len(prompt)
        return sum(len(p.split()) for p in prompt if isinstance(p, str))
    return len(str(prompt).split())


def output_tokens(body: dict[str, Any]) -> int:
    for key in ("max_completion_tokens", "max_tokens"):
        value = body.get(key)
        if isinstance(value, int) and value > 0:
            return value
    return 16


class _Http:
    """Just enough HTTP/1.1 for the harnesses' clients: keep-alive, Content-Length bodies, chunked replies."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer

    async def request(self) -> tuple[str, str, dict[str, str], bytes] | None:
        line = await self.reader.readline()
        if not line:
            return None
        method, path, _ = line.decode("latin-1").split(" ", 2)
        headers: dict[str, str] = {}
        while (header := await self.reader.readline()) not in (b"\r\n", b"\n", b""):
            name, _, value = header.decode("latin-1").partition(":")
            headers[name.strip().lower()] = value.strip()
        body = b""
        if "content-length" in headers:
            body = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                body += await self.reader.readexactly(size)
                await self.reader.readline()
            await self.reader.readline()
        return method, path.split("?")[0], headers, body

    def head(self, status: str, content_type: str, chunked: bool, length: int = 0) -> None:
        framing = "Transfer-Encoding: chunked" if chunked else f"Content-Length: {length}"
        self.writer.write(
            f"HTTP/1.1 {status}\r\nContent-Type: {content_type}\r\n{framing}\r\n"
            "Connection: keep-alive\r\n\r\n".encode()
        )

    async def whole(self, status: str, obj: Any) -> None:
        data = json.dumps(obj).encode()
        self.head(status, "application/json", False, len(data))
        self.writer.write(data)
        await self.writer.drain()

    async def chunk(self, data: bytes) -> None:
        self.writer.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        await self.writer.drain()


async def _generate(http: _Http, path: str, body: dict[str, Any], speed: Speed) -> None:
    chat = path.endswith("/chat/completions")
    n_in, n_out = prompt_tokens(body), output_tokens(body)
    created, rid = int(time.time()), f"standin-{uuid.uuid4().hex[:12]}"
    model = body.get("model") or speed.model
    usage = {"prompt_tokens": n_in, "completion_tokens": n_out, "total_tokens": n_in + n_out}
    start = time.perf_counter()

    async def until(offset: float) -> None:
        delay = start + offset - time.perf_counter()
        if delay > 0:
            await asyncio.sleep(delay)

    def choice(text: str, finish: str | None) -> dict[str, Any]:
        if chat:
            return {"index": 0, "delta": {"content": text}, "finish_reason": finish}
        return {"index": 0, "text": text, "finish_reason": finish}

    kind = "chat.completion" if chat else "text_completion"
    if not body.get("stream"):
        await until(speed.ttft_s(n_in) + (n_out - 1) * speed.itl_s)
        text = TOKEN * n_out
        answer = (
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "length"}
            if chat
            else {"index": 0, "text": text, "finish_reason": "length"}
        )
        await http.whole(
            "200 OK",
            {
                "id": rid,
                "object": kind,
                "created": created,
                "model": model,
                "choices": [answer],
                "usage": usage,
            },
        )
        return
    http.head("200 OK", "text/event-stream", True)
    kind += ".chunk" if chat else ""

    async def event(obj: Any) -> None:
        await http.chunk(b"data: " + json.dumps(obj).encode() + b"\n\n")

    await until(speed.ttft_s(n_in))
    start = time.perf_counter()  # the tokens keep their pace from the first one, however late it was
    if chat:  # the role comes with the first token, with no content, as vLLM sends it
        await event(
            {
                "id": rid,
                "object": kind,
                "created": created,
                "model": model,
                "choices": [
                    {"index": 0, "delta": {"role": "assistant", "content": ""}, "finish_reason": None}
                ],
            }
        )
    for i in range(n_out):
        await until(i * speed.itl_s)
        finish = "length" if i == n_out - 1 else None
        await event(
            {
                "id": rid,
                "object": kind,
                "created": created,
                "model": model,
                "choices": [choice(TOKEN, finish)],
            }
        )
    options = body.get("stream_options")
    if isinstance(options, dict) and options.get("include_usage"):
        await event(
            {"id": rid, "object": kind, "created": created, "model": model, "choices": [], "usage": usage}
        )
    await http.chunk(b"data: [DONE]\n\n")
    await http.chunk(b"")


async def _serve_connection(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter, speed: Speed, served: itertools.count[int]
) -> None:
    http = _Http(reader, writer)
    try:
        while (request := await http.request()) is not None:
            method, path, _, raw = request
            if method == "GET" and path in ("/health", "/v1/health", "/ping"):
                await http.whole("200 OK", {"status": "ok"})
            elif method == "GET" and path == "/corpus.txt":
                text = corpus()
                http.head("200 OK", "text/plain; charset=utf-8", False, len(text))
                writer.write(text)
                await writer.drain()
            elif method == "GET" and path == "/v1/models":
                await http.whole(
                    "200 OK",
                    {
                        "object": "list",
                        "data": [{"id": speed.model, "object": "model", "owned_by": "standin"}],
                    },
                )
            elif method == "POST" and path in ("/v1/chat/completions", "/v1/completions"):
                try:
                    body = json.loads(raw or b"{}")
                except ValueError:
                    await http.whole("400 Bad Request", {"error": {"message": "body is not JSON"}})
                    continue
                if speed.fail_every and next(served) % speed.fail_every == 0:
                    await http.whole("500 Internal Server Error", {"error": {"message": "stand-in failure"}})
                    continue
                await _generate(http, path, body if isinstance(body, dict) else {}, speed)
            else:
                await http.whole("404 Not Found", {"error": {"message": f"no route {method} {path}"}})
    except (ConnectionError, asyncio.IncompleteReadError, ValueError):
        pass
    finally:
        writer.close()


async def serve(
    speed: Speed,
    host: str,
    port: int,
    max_seconds: float,
    ready: asyncio.Event | None = None,
    bound_port: list[int] | None = None,
) -> None:
    """Serve until cancelled, a signal, or ``max_seconds``; print the address once listening (and append
    the port to ``bound_port``, then set ``ready``)."""
    served = itertools.count(1)  # generation requests, for --fail-every
    server = await asyncio.start_server(lambda r, w: _serve_connection(r, w, speed, served), host, port)
    bound = server.sockets[0].getsockname()[1]
    print(f"listening on http://{host}:{bound}", flush=True)
    if bound_port is not None:
        bound_port.append(bound)
    if ready is not None:
        ready.set()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
    async with server:
        try:
            await asyncio.wait_for(stop.wait(), max_seconds)
        except TimeoutError:
            pass


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0] if __doc__ else None)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--tok-s", type=float, default=Speed.tok_s)
    parser.add_argument("--ttft-ms", type=float, default=Speed.ttft_ms)
    parser.add_argument("--ttft-ms-per-prompt-token", type=float, default=Speed.ttft_ms_per_prompt_token)
    parser.add_argument("--model", default=Speed.model)
    parser.add_argument("--fail-every", type=int, default=0, help="answer every n-th request with HTTP 500")
    parser.add_argument("--max-seconds", type=float, default=3600, help="stop by itself after this long")
    args = parser.parse_args(argv)
    speed = Speed(args.tok_s, args.ttft_ms, args.ttft_ms_per_prompt_token, args.model, args.fail_every)
    asyncio.run(serve(speed, args.host, args.port, args.max_seconds))
    return 0


if __name__ == "__main__":
    sys.exit(main())
