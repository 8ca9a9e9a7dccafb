import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


#: What a copy of the workflow needs (not data/, figures/ or the sources, which are installed).
WORKFLOW_FILES = ("Snakefile", "workflow", "config", "profiles", "environment.yml")


def copy_workflow(dest: Path, mini: bool = False) -> Path:
    """Copy the workflow into ``dest`` (and the test config ``tests/data/mini.yaml`` into its
    ``config/`` when ``mini``)."""
    import shutil

    for name in WORKFLOW_FILES:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, dirs_exist_ok=True)
        else:
            shutil.copy(src, dest / name)
    if mini:
        shutil.copy(ROOT / "tests" / "data" / "mini.yaml", dest / "config" / "mini.yaml")
    return dest


def pytest_collection_modifyitems(config, items):
    # Long end-to-end tests go first: under pytest -n 2 they start at once on the two workers
    # and the many short tests fill the time beside them (longest first), instead of one long
    # test running alone at the end.
    items.sort(key=lambda it: 0 if it.get_closest_marker("slow") else 1)


os.environ.setdefault("MPLBACKEND", "Agg")
