"""A pytest plugin (tests/conftest.py loads it): with DIFFUSION_INFILL_REQUIRE_ALL=1 (.ci/run sets it) a
test that skips fails instead. The editor and npm-peer tests skip where a tool is missing, which is
right on a developer's machine and wrong in CI, where a tool that failed to install must not pass."""

from __future__ import annotations

import os

import pytest

REQUIRE_ALL = "DIFFUSION_INFILL_REQUIRE_ALL"


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo):
    outcome = yield
    report = outcome.get_result()
    if os.environ.get(REQUIRE_ALL) == "1" and report.skipped and not hasattr(report, "wasxfail"):
        reason = report.longrepr[-1] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped, and {REQUIRE_ALL}=1 requires every test to run: {reason}"
