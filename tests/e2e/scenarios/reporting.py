"""One line a scenario: ``e2e: PASS  name  12.3 s  detail``, as the scenarios print it as they finish.

pytest's own progress (a dot a test) says nothing about a run of minutes; this plugin prints, for each
scenario, PASS or FAIL (ERROR when what it builds on could not be set up), the time of its call and
the detail it recorded (``record``: what was compared, how many, which revision) or what failed. The
fixtures that set up what scenarios build on (the control plane, the main stack) print a ``SETUP`` line
with their own time, so each minute of a run is on exactly one line. A summary line ends the run.

It also turns SIGTERM into the KeyboardInterrupt a Ctrl-C raises, so that `timeout make e2e` or a CI
runner stopping the job still runs the fixtures' finalizers, which stop every process by PID.
"""

from __future__ import annotations

import contextlib
import signal
import time
from collections.abc import Callable, Generator
from typing import Final

import pytest

Record = Callable[[str], None]
"""What a scenario calls with its detail line (the ``record`` fixture)."""
DETAIL: Final = "detail"
"""The key of a scenario's detail among its ``user_properties`` (junitxml writes them too)."""
NAME_WIDTH: Final = 18
SECONDS_PER_MINUTE: Final = 60.0
INDENT: Final = "      "


def scenario_name(nodeid: str) -> str:
    """``test_image_change`` -> ``image-change``; ``test_package[go]`` -> ``package-go``."""
    test = nodeid.rsplit("::", 1)[-1].removeprefix("test_")
    base, _, parameter = test.partition("[")
    name = base.replace("_", "-")
    return f"{name}-{parameter.rstrip(']')}" if parameter else name


def raise_interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


class ScenarioReporter:
    """The pytest plugin that prints the lines (registered by the scenarios' conftest)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.started = time.monotonic()
        self.passed = 0
        self.failed = 0
        self.interrupted = False
        self.failures: dict[tuple[str, str], str] = {}

    def write(self, line: str) -> None:
        """A line on the terminal now, even from a fixture (whose output pytest captures otherwise)."""
        terminal = self.config.pluginmanager.get_plugin("terminalreporter")
        capture = self.config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            if terminal is not None:
                terminal.write_line(line)
                terminal.flush()
            else:
                print(line, flush=True)

    def line(self, word: str, name: str, seconds: float, detail: str) -> None:
        self.write(f"e2e: {word:<5} {name:<{NAME_WIDTH}} {seconds:6.1f} s  {detail}".rstrip())

    def set_up(self, what: str, seconds: float, detail: str = "") -> None:
        """A fixture's line: what it set up, in how long."""
        self.line("SETUP", what, seconds, detail)

    # -- hooks ----------------------------------------------------------------------------------------

    def pytest_sessionstart(self, session: pytest.Session) -> None:
        self.started = time.monotonic()
        signal.signal(signal.SIGTERM, raise_interrupt)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        if report.failed and call.excinfo is not None:
            error = call.excinfo.value
            said = str(error) if isinstance(error, AssertionError) else call.excinfo.exconly()
            self.failures[(report.nodeid, report.when)] = said
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        name = scenario_name(report.nodeid)
        if report.when == "call":
            if report.passed:
                self.passed += 1
                detail = dict(report.user_properties).get(DETAIL, "")
                self.line("PASS", name, report.duration, str(detail))
                return
            word = "SKIP" if report.skipped else "FAIL"
        elif report.failed:
            word = "ERROR"
        else:
            return
        if word != "SKIP":
            self.failed += 1
        said = self.failures.pop((report.nodeid, report.when), "")
        self.line(word, name, report.duration, f"({report.when})" if report.when != "call" else "")
        if said:
            self.write(INDENT + said.replace("\n", "\n" + INDENT))

    @pytest.hookimpl(wrapper=True)
    def pytest_report_teststatus(
        self, report: pytest.TestReport, config: pytest.Config
    ) -> Generator[None, tuple[str, str, str], tuple[str, str, str]]:
        """pytest's counts stay, its dots go (the lines above say more)."""
        category, _letter, word = yield
        return category, "", word

    def pytest_keyboard_interrupt(self) -> None:
        self.interrupted = True

    def pytest_terminal_summary(self) -> None:
        minutes = (time.monotonic() - self.started) / SECONDS_PER_MINUTE
        interrupted = ", interrupted" if self.interrupted else ""
        self.write(f"e2e: {self.passed} passed, {self.failed} failed{interrupted}, in {minutes:.1f} min")
