import os
from pathlib import Path

import pytest


# Per-test time limits (pytest-timeout; the fast tiers get pyproject's default): a hang fails its
# test with a traceback instead of running until CI is killed. Each is several times the longest
# such test seen: the host tier boots the lab VM (25-50 s) and some tests boot it twice; kernel
# tests build labs and measure for up to a minute or two under software emulation. A longer
# test says so itself with @pytest.mark.timeout(seconds).
TIER_TIMEOUT_S = {"host": 300, "kernel": 600}


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.integration)
        tier = item.path.parent.name
        if tier in TIER_TIMEOUT_S and item.get_closest_marker("timeout") is None:
            item.add_marker(pytest.mark.timeout(TIER_TIMEOUT_S[tier]))


@pytest.fixture(scope="session", autouse=True)
def _root():
    # A failure, not a skip: CI must not go green with no integration test run.
    if os.geteuid() != 0:
        pytest.fail("integration tests build real labs and need root: this tier did NOT run "
                    "(run `make test` as root, e.g. in CI's container)", pytrace=False)


def pytest_addoption(parser):
    parser.addoption("--passed-log", metavar="PATH",
                     help="append the node id of each test that passed (every phase) to PATH as it ends: "
                          "make test's second run after a lab VM lock-up runs only the others")


class _PassedLog:
    """Writes each passed test's id as it ends, so a lab VM stopped mid-tier keeps what passed."""

    def __init__(self, path: Path):
        self.path = path
        self.not_passed: set[str] = set()  # a phase failed or skipped

    def pytest_runtest_logreport(self, report):
        if report.failed or report.skipped:
            self.not_passed.add(report.nodeid)
        elif report.when == "teardown" and report.nodeid not in self.not_passed:
            with open(self.path, "a") as f:
                f.write(report.nodeid + "\n")


def pytest_configure(config):
    # Under pytest-xdist the controller sees every worker's reports: it alone writes the log.
    if (log := config.getoption("passed_log", None)) and not hasattr(config, "workerinput"):
        config.pluginmanager.register(_PassedLog(Path(log).resolve()), "linklab-passed-log")
