import os

import pytest


def pytest_collection_modifyitems(config, items):
    for item in items:
        item.add_marker(pytest.mark.integration)


@pytest.fixture(scope="session", autouse=True)
def _root():
    if os.geteuid() != 0:
        pytest.skip("integration tests build real labs: they need root")
