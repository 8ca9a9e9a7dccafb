import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


def pytest_collection_modifyitems(config, items):
    # Long end-to-end tests run last, so a numerical failure shows first.
    items.sort(key=lambda it: 1 if it.get_closest_marker("slow") else 0)


os.environ.setdefault("MPLBACKEND", "Agg")
