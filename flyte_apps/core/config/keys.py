"""The stack config's top-level keys, all under ``flyte-apps:``; every section reads its key from here."""

from __future__ import annotations

from typing import Final

from flyte_apps.core import constants as c

PREFIX: Final = f"{c.PROJECT_NAME}:"
KEY_PLATFORM: Final = "platform"
KEY_PROJECT: Final = "project"
KEY_DOMAIN: Final = "domain"
KEY_APPS: Final = "apps"
KEY_MANAGER: Final = "manager"
KEY_KNATIVE: Final = "knative"
KEY_APP_FILES: Final = "appFiles"
"""Files of more apps, beside the stack file: read from disk and appended to ``apps`` before the config
is checked (``flyte_apps.core.appfiles``), so no section reads this key itself."""
TOP_LEVEL_KEYS: Final = (KEY_PLATFORM, KEY_PROJECT, KEY_DOMAIN, KEY_APPS, KEY_MANAGER, KEY_KNATIVE)
APP_KEY_POD: Final = "pod"
"""An app's pod template, the costliest part of an app to check."""
