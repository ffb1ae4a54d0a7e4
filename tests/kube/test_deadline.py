"""The retry layer's time budget (``RetryPolicy.timeout``, ``--request-timeout``) and its checks of
answers of the wrong shape (issue 17, items 2 and 3)."""

from __future__ import annotations

import time
from typing import Any

import pytest
import urllib3
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from flyte_apps.kube.api import list_custom_objects
from flyte_apps.kube.errors import KubeBadResponse, KubeError, KubeUnreachable
from flyte_apps.kube.retry import KubeOperation, RetryPolicy, call
from tests.fakes.kube_api import FakeKubeApi

OP = KubeOperation("get", "pods", "flyte", "web")
HOST = "https://cluster.example"


class Recorder:
    """A stand-in API method: records each attempt's ``_request_timeout``, then raises."""

    def __init__(self, error: BaseException) -> None:
        self.error = error
        self.timeouts: list[Any] = []

    def __call__(self, **kwargs: Any) -> Any:
        self.timeouts.append(kwargs.get("_request_timeout"))
        raise self.error


def unavailable(retry_after: str | None = None) -> ApiException:
    """503, or 429 with ``Retry-After`` when ``retry_after`` is given."""
    status, reason = (503, "Service Unavailable") if retry_after is None else (429, "Too Many Requests")
    exc = ApiException(status=status, reason=reason)
    exc.headers = {"Retry-After": retry_after} if retry_after is not None else {}
    return exc


def test_each_request_gets_at_most_the_time_left() -> None:
    fn = Recorder(urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out"))  # type: ignore[arg-type]
    retry = RetryPolicy(attempts=3, base_delay=0.0, sleep=lambda _: None, timeout=5.0)
    with pytest.raises(KubeUnreachable):
        call(fn, _request_timeout=30.0, op=OP, retry=retry, host=HOST)
    assert len(fn.timeouts) == 3
    assert all(0 < t <= 5.0 for t in fn.timeouts)
    assert fn.timeouts == sorted(fn.timeouts, reverse=True)


def test_no_retry_is_waited_for_past_the_deadline() -> None:
    slept: list[float] = []
    fn = Recorder(unavailable(retry_after="10"))
    retry = RetryPolicy(attempts=4, sleep=slept.append, timeout=1.0)
    with pytest.raises(KubeError, match="HTTP 429"):
        call(fn, _request_timeout=30.0, op=OP, retry=retry, host=HOST)
    assert len(fn.timeouts) == 1  # a 10 s Retry-After would end past the 1 s budget: no second try
    assert slept == []


def test_a_call_that_used_up_its_budget_says_which_timeout_ran_out() -> None:
    def slow(**kwargs: Any) -> Any:
        time.sleep(float(kwargs["_request_timeout"]))
        raise urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out")  # type: ignore[arg-type]

    retry = RetryPolicy(
        attempts=4, base_delay=0.0, sleep=lambda _: None, timeout=0.2, timeout_source="--request-timeout"
    )
    with pytest.raises(KubeUnreachable, match=r"within --request-timeout 200ms") as raised:
        call(slow, _request_timeout=30.0, op=OP, retry=retry, host=HOST)
    assert "\n" not in str(raised.value)


def test_a_bound_no_user_set_is_named_by_its_length_alone() -> None:
    """The RevisionReaper runs in `pulumi up`, where no --request-timeout exists to name."""

    def slow(**kwargs: Any) -> Any:
        time.sleep(float(kwargs["_request_timeout"]))
        raise urllib3.exceptions.ReadTimeoutError(None, "/", "read timed out")  # type: ignore[arg-type]

    retry = RetryPolicy(attempts=4, base_delay=0.0, sleep=lambda _: None, timeout=0.2)
    with pytest.raises(KubeUnreachable, match=r"within 200ms \(while trying to") as raised:
        call(slow, _request_timeout=30.0, op=OP, retry=retry, host=HOST)
    assert "request-timeout" not in str(raised.value)


def test_a_stream_keeps_its_read_timeout_only_its_connect_is_bounded() -> None:
    fn = Recorder(unavailable())
    retry = RetryPolicy(attempts=1, timeout=5.0)
    with pytest.raises(KubeError, match="HTTP 503"):
        call(fn, _request_timeout=(10.0, None), stream=True, op=OP, retry=retry, host=HOST)
    [(connect, read)] = fn.timeouts
    assert connect <= 5.0
    assert read is None


def test_no_timeout_leaves_the_callers_request_timeout() -> None:
    fn = Recorder(unavailable())
    with pytest.raises(KubeError, match="HTTP 503"):
        call(fn, _request_timeout=30.0, op=OP, retry=RetryPolicy(attempts=1, timeout=None), host=HOST)
    assert fn.timeouts == [30.0]


def test_a_timeout_must_be_positive() -> None:
    with pytest.raises(ValueError, match="timeout"):
        RetryPolicy(timeout=0.0)


def test_ctrl_c_is_not_a_bad_response() -> None:
    with pytest.raises(KeyboardInterrupt):
        call(Recorder(KeyboardInterrupt()), op=OP, host=HOST)


def test_what_the_client_cannot_read_is_a_bad_response_naming_the_object() -> None:
    with pytest.raises(KubeBadResponse, match=r"answered get pods 'flyte/web' with something that is not"):
        call(Recorder(ValueError("1 validation error for V1Pod\nmore")), op=OP, host=HOST)


def test_a_list_whose_continue_token_repeats_ends_with_an_error(
    kube_server: FakeKubeApi, kube_api: client.ApiClient
) -> None:
    page = '{"kind": "List", "items": [{"metadata": {"name": "a"}}], "metadata": {"continue": "x"}}'
    kube_server.serve_raw_next("/services", 200, page, times=None)
    with pytest.raises(KubeBadResponse, match="continue token 'x' repeats"):
        list_custom_objects(
            kube_api, group="serving.knative.dev", version="v1", plural="services", namespace="flyte"
        )
    assert len(kube_server.requests_matching(path_contains="/services")) == 2
