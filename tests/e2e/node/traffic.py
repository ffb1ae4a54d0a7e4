"""HTTP to the node's pods and ingress, from inside the run's network namespace: every request bounded
in time, every retry loop in count (the test app answers JSON: ``tools/images/cmd/testapp``)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any, Final

HTTP_TIMEOUT_S: Final = 10.0
REQUEST_ATTEMPTS: Final = 60
REQUEST_PAUSE_S: Final = 1.0
SHOWN_BODY: Final = 200


class TrafficError(Exception):
    """A request that never got the answer it waited for."""


def get(url: str, host: str | None = None, timeout: float = HTTP_TIMEOUT_S) -> tuple[int, bytes]:
    """One GET (no proxy, whatever the environment says), ``Host`` set when given: status and body."""
    request = urllib.request.Request(url, headers={"Host": host} if host else {})
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=timeout) as response:
            return int(response.status), bytes(response.read())
    except urllib.error.HTTPError as exc:
        return int(exc.code), bytes(exc.read())


def get_until_ok(url: str, host: str | None = None, attempts: int = REQUEST_ATTEMPTS) -> bytes:
    """GET ``url`` until it answers 200, at most ``attempts`` times a second apart; its body."""
    last = ""
    for _ in range(attempts):
        try:
            status, body = get(url, host)
            if status == 200:
                return body
            last = f"{status} {body[:SHOWN_BODY]!r}"
        except OSError as exc:
            last = str(exc)
        time.sleep(REQUEST_PAUSE_S)
    msg = f"GET {url} (Host {host}): no 200 in {attempts} tries; last: {last}"
    raise TrafficError(msg)


def report(url: str, host: str | None = None, attempts: int = REQUEST_ATTEMPTS) -> dict[str, Any]:
    """The test app's report (its args, env, the request, mounts, /dev/shm) at ``url``."""
    return dict(json.loads(get_until_ok(url, host, attempts)))
