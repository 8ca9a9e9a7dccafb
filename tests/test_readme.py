"""The README and the docs pages it points to cannot go stale: their job counts and costs are the
workflow's, their commands run in the installed environment as typed, and their CLI examples
print the numbers they state; the README stays a short front page."""

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


#: The pages a user reads besides the theory: the README and the docs pages it points to.
PAGES = ("README.md", "docs/cost.md", "docs/results.md", "docs/workflow.md", "docs/testing.md",
         "docs/layout.md", "docs/index.md")


@pytest.fixture(scope="module")
def readme(root) -> str:
    """Every page's text, one after the other (the checks below apply to each)."""
    return "\n".join((root / p).read_text() for p in PAGES)


def test_readme_is_a_short_front_page(root):
    """About 200 lines: what aimlib is, the corrections, install and test, the quick and paper
    presets, the CLI and library in a few lines, what to do when something goes wrong, and
    links to the rest, each of which exists."""
    text = (root / "README.md").read_text()
    assert len(text.splitlines()) <= 220
    heads = [ln for ln in text.splitlines() if ln.startswith("## ")]
    assert heads == ["## Install and test", "## The quick preset: every figure in minutes",
                     "## The paper preset, and a cluster", "## The command line and the library",
                     "## When something goes wrong", "## Where the rest is"]
    for link in re.findall(r"\]\(([^)#]+)", text):
        assert (root / link).exists(), link
    # the module paths it names are real ones
    for mod in re.findall(r"`(aimlib(?:\.\w+)+)`", text):
        __import__(mod)


def _estimate(root, preset):
    conf = fill_defaults(yaml.safe_load((root / PRESETS[preset]).read_text()))
    return cost.estimate(conf)


def test_stated_job_counts_and_costs_are_the_workflows(root, readme):
    """Every number the README marks with `<!-- readme-check: preset.what -->` is what the
    cost estimate (whose job count is the DAG's: tests/test_workflow.py) gives today."""
    marks = re.findall(r"<!-- readme-check: (\w+)\.(\w+) -->\s*([0-9][0-9,.]*)", readme)
    assert {(p, w) for p, w, _ in marks} >= {("quick", "jobs"), ("paper", "jobs"),
                                              ("paper", "cpu_hours")}
    # a number stated on two pages is checked on both
    assert sum(w == "cpu_hours" and p == "paper" for p, w, _ in marks) >= 2
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
