"""The language server's stdio loop: JSON-RPC frames read so that no client message leaves it deaf or silent.

pygls's own loop (`pygls.io_.run_async`) reads a frame only when a header line is exactly `Content-Length: N`:
after one malformed frame (`Content-Length: abc`) the body of that frame swallows the next header, and every
frame after it is lost, `shutdown` included. A request whose params do not match the protocol (a negative
position) fails while it is decoded, before pygls knows its id, so it gets a popup and never a response, and the
client waits forever. This loop instead:

- finds `Content-Length: N` at the end of any header line (the frame after a malformed one is read again);
- reads a frame of at most `MAX_MESSAGE` bytes, skipping the body of a larger one in chunks;
- answers a request that cannot be decoded with a JSON-RPC error response (`-32602` invalid params, `-32700`
  parse error), and drops a notification that cannot be decoded with a log message;
- answers a request pygls would drop in silence (not `"jsonrpc": "2.0"`, or sent after `shutdown`) with
  `-32600` invalid request.

`exit` ends the process at once (`os._exit`): a lint still running on a thread or in the worker process must
not keep it alive (asyncio would join the thread, the process pool its worker).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import re
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcParseError
from pygls.io_ import StdinAsyncReader, StdoutWriter

if TYPE_CHECKING:
    from pygls.lsp.server import LanguageServer

MAX_MESSAGE = 256 * 1024 * 1024  # a frame larger than this is skipped, not held in memory
_CHUNK = 1024 * 1024
_LENGTH = re.compile(rb"Content-Length:[ \t]*(\d+)[ \t]*\r?\n\Z", re.IGNORECASE)
logger = logging.getLogger(__name__)


def start_io(server: LanguageServer) -> None:
    """Serve over stdin/stdout with `read_loop` (in place of `server.start_io()`)."""
    stop = threading.Event()
    server._stop_event = stop
    reader = StdinAsyncReader(sys.stdin.buffer, server.thread_pool)
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(read_loop(stop, reader, server))
    except BrokenPipeError:
        logger.error("the connection to the client is lost; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]


async def read_loop(stop: threading.Event, reader: Any, server: LanguageServer) -> None:
    """Read frames from `reader` (`readline`, `readexactly`) and hand each message to the server's protocol."""
    length: int | None = None
    while not stop.is_set():
        header = await reader.readline()
        if not header:
            break
        match = _LENGTH.search(header)
        if match is not None:
            length = int(match.group(1))
            continue
        if header.strip():
            continue  # another header (Content-Type), or what is left of a malformed frame
        if length is None:
            continue  # a blank line with no length before it: nothing to read
        size, length = length, None
        if size > MAX_MESSAGE:
            await _skip(reader, size)
            logger.error("skipped a message of %d bytes (over %d)", size, MAX_MESSAGE)
            continue
        body = await reader.readexactly(size)
        if len(body) < size:
            break
        handle(server, body)


async def _skip(reader: Any, size: int) -> None:
    while size > 0:
        chunk = await reader.readexactly(min(size, _CHUNK))
        if not chunk:
            return
        size -= len(chunk)


def handle(server: LanguageServer, body: bytes) -> None:
    """One message: decoded by pygls and handled, or, when it cannot be decoded, an error response to a request
    (its id read from the raw JSON) and a log line for anything else."""
    protocol = server.protocol
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except Exception as error:  # pygls raises JsonRpcInvalidParams, JsonRpcInternalError, or JSON errors
        _refuse(server, body, error)
        return
    ident, method = getattr(message, "id", None), getattr(message, "method", None)
    if isinstance(ident, (int, str)) and not isinstance(ident, bool) and isinstance(method, str):
        # pygls drops these requests without a word; the client would wait forever
        if getattr(message, "jsonrpc", None) != "2.0":
            _error(server, ident, -32600, f"{method}: not a JSON-RPC 2.0 request")
            return
        if getattr(protocol, "_shutdown", False) and method != "exit":
            _error(server, ident, -32600, f"{method}: the server is shut down")
            return
    try:
        protocol.handle_message(message)
    except Exception:  # a handler's own failure is pygls's to report; the loop goes on
        logger.exception("unable to handle a message")


def _refuse(server: LanguageServer, body: bytes, error: Exception) -> None:
    raw: Any
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        raw = None
    cause = error.__cause__ or error
    if raw is None:
        failure: JsonRpcException = JsonRpcParseError()
    elif isinstance(error, JsonRpcException):
        failure = error
    else:
        failure = JsonRpcInvalidParams()
    ident = raw.get("id") if isinstance(raw, dict) else None
    method = raw.get("method") if isinstance(raw, dict) else None
    summary = f"{type(cause).__name__}: {str(cause).splitlines()[0] if str(cause) else ''}"
    logger.error("cannot decode a message (%s): %s", method, summary)
    if isinstance(ident, (int, str)) and not isinstance(ident, bool) and isinstance(method, str):
        _error(server, ident, failure.code, f"{method}: cannot decode the request: {summary}"[:2000])


def _error(server: LanguageServer, ident: int | str, code: int, message: str) -> None:
    _write(server, {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}})


def _write(server: LanguageServer, message: dict[str, Any]) -> None:
    body = json.dumps(message).encode("utf-8")
    writer = server.protocol.writer
    if writer is None:
        return
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)


def watch_parent(parent: int) -> None:
    """In the server's worker process: end it when the server is gone (killed, even with SIGKILL), so that no
    worker is left linting for nobody."""

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="dslint-watch-parent", daemon=True).start()


def exit_now(server: LanguageServer, shut_down: bool) -> None:
    """`exit`: flush what was sent, stop the worker processes, and end the process (0 after `shutdown`, 1
    without), whatever is still running."""
    with contextlib.suppress(Exception):
        sys.stdout.flush()
    os._exit(0 if shut_down else 1)
