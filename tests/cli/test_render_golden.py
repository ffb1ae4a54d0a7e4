"""`flyte-apps render --stack dev` prints exactly the bytes it printed before the package move."""

from __future__ import annotations

from typer.testing import CliRunner

from flyte_apps.cli.main import app
from tests.support.config import REPO_ROOT

GOLDEN = REPO_ROOT / "tests" / "fixtures" / "render-dev.yaml"


def test_render_of_the_dev_stack_is_unchanged_byte_for_byte() -> None:
    result = CliRunner().invoke(app, ["render", "--stack", "dev", "--project-dir", str(REPO_ROOT)])
    assert result.exit_code == 0, result.stderr
    assert result.stdout == GOLDEN.read_text(encoding="utf-8")
