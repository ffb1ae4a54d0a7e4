"""Answers read within bounds, so that a hostile server or proxy cannot make a call take unbounded
memory or time.

Every answer the ``kubernetes`` client reads whole goes through :class:`BoundedApiClient`, whose
responses are read within :data:`MAX_RESPONSE_BYTES` (counted after decompression: a small gzip
body that inflates to gigabytes is cut at the bound, never inflated whole) and within the request's
own timeout for the *whole* body: a server that sends one byte every few seconds, each read within
the socket's timeout, is cut off when the timeout runs out, which is what ``--request-timeout``
promises. Streams the tool reads itself (watch events, logs) are split into lines of bounded length
(:func:`bounded_lines`).

What stays bounded only by the socket's per-read timeout: the status line and headers, which
``http.client`` reads before a response object exists (at most 100 header lines of 64 KiB each).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from typing import Any, Final

import urllib3
from kubernetes import client as k8s
from kubernetes.client import rest

from flyte_apps.core.bounds import size_text

MAX_RESPONSE_BYTES: Final = 64 * 2**20
"""Bytes one answer may hold once decompressed. A page of :data:`~flyte_apps.kube.api.DEFAULT_PAGE_SIZE`
objects is a few megabytes; etcd refuses an object over 1.5 MiB."""
MAX_EVENT_BYTES: Final = MAX_RESPONSE_BYTES
"""Bytes one watch event (one line: one object) may hold."""
READ_SIZE: Final = 64 * 1024
"""Bytes asked of the socket at a time (decompressed: urllib3 inflates at most this much per read)."""
_ANSWER: Final = "the answer"
_LINE: Final = "a line of the stream"
_TOOK_TOO_LONG: Final = "the whole answer took longer than the request's timeout"


class ResponseTooLarge(ValueError):
    """An answer, or a line of a stream, longer than its bound. A ``ValueError``: the retry layer
    reports it as an answer that is not a Kubernetes response, and does not retry it."""


def too_large(what: str, limit: int) -> ResponseTooLarge:
    return ResponseTooLarge(f"{what} is larger than {size_text(limit)} (decompressed); not read further")


class _Deadline:
    """Shuts ``response`` down (which ends a read blocked in another thread) when ``seconds`` pass,
    unless :meth:`cancel` came first; :attr:`fired` says whether it did."""

    def __init__(self, response: urllib3.BaseHTTPResponse, seconds: float) -> None:
        self._response = response
        self._lock = threading.Lock()
        self._done = False
        self.fired = False
        self._timer = threading.Timer(max(0.0, seconds), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def _fire(self) -> None:
        with self._lock:
            if self._done:
                return
            self.fired = True
        try:
            self._response.shutdown()
        except (ValueError, RuntimeError, OSError):
            self._response.close()  # already released or never had a socket: nothing left to unblock

    def cancel(self) -> None:
        with self._lock:
            self._done = True
        self._timer.cancel()


def read_body(
    response: urllib3.BaseHTTPResponse, *, limit: int = MAX_RESPONSE_BYTES, seconds: float | None = None
) -> bytes:
    """The whole body of ``response``, decompressed: :class:`ResponseTooLarge` past ``limit`` bytes,
    urllib3's ``ReadTimeoutError`` when it is not all there within ``seconds`` (None: no bound but
    each read's socket timeout)."""
    deadline = None if seconds is None else _Deadline(response, seconds)
    parts: list[bytes] = []
    size = 0
    try:
        for piece in response.stream(READ_SIZE, decode_content=True):
            size += len(piece)
            if size > limit:
                response.close()
                raise too_large(_ANSWER, limit)
            parts.append(piece)
    except (urllib3.exceptions.HTTPError, OSError) as exc:
        if deadline is not None and deadline.fired:
            raise _timed_out(response) from exc
        raise
    finally:
        if deadline is not None:
            deadline.cancel()
    if deadline is not None and deadline.fired:
        raise _timed_out(response)  # the shutdown read as a clean end: the body is cut short
    return b"".join(parts)


def _timed_out(response: urllib3.BaseHTTPResponse) -> urllib3.exceptions.ReadTimeoutError:
    url = str(response.url or "")
    return urllib3.exceptions.ReadTimeoutError(None, url, _TOOK_TOO_LONG)  # type: ignore[arg-type]


def bounded_lines(response: urllib3.BaseHTTPResponse, *, limit: int) -> Iterator[bytes]:
    """The lines of a stream (without their ``\\n``) as they arrive, each read in pieces of at most
    :data:`READ_SIZE` bytes; a line longer than ``limit`` is :class:`ResponseTooLarge`. The last line
    comes even without a newline."""
    pending = bytearray()
    for piece in response.stream(READ_SIZE, decode_content=True):
        start = 0
        while (end := piece.find(b"\n", start)) >= 0:
            if len(pending) + end - start > limit:
                raise too_large(_LINE, limit)
            if pending:
                pending += piece[start:end]
                yield bytes(pending)
                pending.clear()
            else:
                yield piece[start:end]
            start = end + 1
        pending += piece[start:]
        if len(pending) > limit:
            raise too_large(_LINE, limit)
    if pending:
        yield bytes(pending)


def _seconds(timeout: object) -> float | None:
    """The time a request's ``_request_timeout`` gives it to answer: a number; the read timeout of
    a ``(connect, read)`` pair; None for no bound."""
    if isinstance(timeout, tuple):
        timeout = timeout[1] if len(timeout) == 2 else None
    return float(timeout) if isinstance(timeout, int | float) else None


class BoundedResponse(rest.RESTResponse):
    """A response whose body, when the client reads it whole, is read by :func:`read_body` within
    the size bound and the time its request was given (counted from when it was sent)."""

    data: bytes | None  # type: ignore[assignment]  # the base class types it by its initial None

    def __init__(self, response: urllib3.BaseHTTPResponse, *, deadline: float | None) -> None:
        super().__init__(response)
        self._deadline = deadline

    def read(self) -> bytes:
        data: bytes | None = self.data
        if data is None:
            seconds = None if self._deadline is None else self._deadline - time.monotonic()
            data = read_body(self.response, seconds=seconds)
            self.data = data
        return data


class BoundedApiClient(k8s.ApiClient):
    """The ``kubernetes`` client with every answer it reads whole bounded (:class:`BoundedResponse`).
    A request made unread (``_preload_content=False``: logs, watches) gets its raw response as
    before, for the caller to read with its own bounds."""

    def call_api(self, *args: Any, **kwargs: Any) -> rest.RESTResponse:
        seconds = _seconds(kwargs.get("_request_timeout"))
        deadline = None if seconds is None else time.monotonic() + seconds
        response = super().call_api(*args, **kwargs)
        return BoundedResponse(response.response, deadline=deadline)
