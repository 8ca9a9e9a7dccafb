"""The README cannot go stale: its job counts and costs are the workflow's, its commands run in
the installed environment as typed, and its CLI examples print the numbers it states."""

import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from aimlib import cli
from aimlib.pipeline import cost
from aimlib.pipeline.config import fill_defaults

PRESETS = {"quick": "config/quick.yaml", "paper": "config/config.yaml",
           "paper_lite": "config/paper_lite.yaml"}


@pytest.fixture(scope="module")
def readme(root) -> str:
    return (root / "README.md").read_text()


def _estimate(root, preset):
    conf = fill_defaults(yaml.safe_load((root / PRESETS[preset]).read_text()))
    return cost.estimate(conf)


def test_stated_job_counts_and_costs_are_the_workflows(root, readme):
    """Every number the README marks with `<!-- readme-check: preset.what -->` is what the
    cost estimate (whose job count is the DAG's: tests/test_workflow.py) gives today."""
    marks = re.findall(r"<!-- readme-check: (\w+)\.(\w+) -->\s*([0-9][0-9,.]*)", readme)
    assert {(p, w) for p, w, _ in marks} >= {("quick", "jobs"), ("paper", "jobs"),
                                              ("paper", "cpu_hours")}
    for preset, what, stated in marks:
        est = _estimate(root, preset)
        value = float(stated.replace(",", ""))
        if what == "jobs":
            assert value == est.total_jobs, (preset, value, est.total_jobs)
        else:
            assert value == pytest.approx(sum(est.cpu_hours.values()), abs=1.0), (preset, value)


def _commands(readme):
    """Every command line of the README's bash blocks (comments and continuations folded)."""
    for block in re.findall(r"```bash\n(.*?)```", readme, re.S):
        for line in block.replace("\\\n", " ").splitlines():
            line = line.split(" #")[0].strip()
            if line and not line.startswith("#"):
                yield line


def test_every_command_runs_as_typed_after_the_install(readme):
    """After the install line and `source .venv/bin/activate`, each command's program is in
    the environment (or is the shell's own): nothing reads `command not found`."""
    bindir = Path(sys.executable).parent
    shell = {"source", "cd", "export", "conda", "git", "python3", "sbatch", "tmux"}
    cmds = list(_commands(readme))
    assert "source .venv/bin/activate" in cmds
    for line in cmds:
        for part in re.split(r"&&|\|\|", line):
            words = shlex.split(part)
            prog = words[0]
            if prog.startswith(".venv/bin/"):
                prog = prog.removeprefix(".venv/bin/")
            assert prog in shell or (bindir / prog).exists(), line


def test_cli_examples_print_the_stated_numbers(readme, capsys):
    """The README's `aimlib se` / `thresholds` / `mmse` examples run, and where a comment
    states a number (`error 0.237111`, `the published curve: 0.512188`), the output has it."""
    checked = 0
    for block in re.findall(r"```bash\n(.*?)```", readme, re.S):
        for line in block.splitlines():
            if not line.startswith("aimlib ") or line.split()[1] not in ("se", "thresholds",
                                                                         "mmse"):
                continue
            cmd, _, comment = line.partition(" #")
            args = shlex.split(cmd)[1:]
            if "--output" in args or "-o" in args:
                continue
            assert cli.main(args) == 0, line
            out = capsys.readouterr().out
            for number in re.findall(r"\b\d\.\d{4,}\b", comment):
                assert number in out, (line, number)
                checked += 1
    assert checked >= 2
