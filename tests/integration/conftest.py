import os

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _root():
    # A failure, not a skip: CI must not go green with no integration test run.
    if os.geteuid() != 0:
        pytest.fail("integration tests build real labs and need root: this tier did NOT run "
                    "(run `make test` as root, e.g. in CI's container)", pytrace=False)
