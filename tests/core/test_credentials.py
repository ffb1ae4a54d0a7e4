"""No credential in an error: the shapes a kubeconfig, a proxy or an HTTP library put in messages."""

from __future__ import annotations

import pytest

from flyte_apps.core.credentials import redact

SECRET = "s3cr3t-V4lue_9"
JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl"


@pytest.mark.parametrize(
    "text",
    [
        f"cannot reach https://admin:{SECRET}@k8s.example.com:6443: refused",
        f"cannot reach https://{SECRET}@k8s.example.com/api",
        f"GET https://k8s.example.com/api/v1/pods?access_token={SECRET}&x=1 failed",
        f"Invalid header value b'Bearer {SECRET}\\n'",
        f"authorization: Basic {SECRET}",
        f"the server said: {JWT} is expired",
        f"token: {SECRET}",
        f'{{"password": "{SECRET}"}}',
        f"client-key-data={SECRET}",
        f"id_token='{SECRET}'",
    ],
)
def test_a_credential_never_survives(text: str) -> None:
    shown = redact(text)
    assert SECRET not in shown and JWT not in shown
    assert "***" in shown


@pytest.mark.parametrize(
    "text",
    [
        "cannot reach https://k8s.example.com:6443 (connection refused)",
        "the continue token 'abc' repeats (the list would never end)",
        "pods 'flyte/app-00001-deployment-abc' not found",
        "kubeconfig file /home/me/.kube/config: no context 'prod'",
    ],
)
def test_ordinary_messages_are_left_as_they_are(text: str) -> None:
    assert redact(text) == text
