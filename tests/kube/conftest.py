"""Fixtures for the Kubernetes access layer tests: a fake API server and a real client for it."""

from collections.abc import Callable, Iterator
from typing import cast

import pytest
import urllib3
from kubernetes import client, config

from tests.fakes.kube_api import FakeKubeApi
from tests.fakes.kube_api import kube_server as kube_server


@pytest.fixture
def kube_api(kube_server: FakeKubeApi) -> Iterator[client.ApiClient]:
    """A real ``kubernetes`` ApiClient loaded from the fake server's kubeconfig file.

    Built with the package's own loader (not ours) so fake-server tests do not depend on the
    code under test in ``flyte_apps.kube``.  urllib3's own retries are off: by default it
    silently retries 429/503 answers that carry ``Retry-After``, which would hide the fake's
    scripted faults from the tests that check them.
    """
    assert kube_server.kubeconfig_path is not None
    configuration = client.Configuration()
    configuration.retries = urllib3.util.Retry(total=0, redirect=False)
    load = cast(Callable[..., client.ApiClient], config.new_client_from_config)
    api = load(
        config_file=str(kube_server.kubeconfig_path),
        persist_config=False,
        client_configuration=configuration,
    )
    try:
        yield api
    finally:
        cast(Callable[[], None], api.close)()  # untyped in the kubernetes package
