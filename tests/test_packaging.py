"""Packaging: environment.yml mirrors the pins of pyproject.toml; the code is ruff clean."""

import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml


def _pins(reqs):
    out = {}
    for r in reqs:
        m = re.fullmatch(r"([A-Za-z0-9_.\-]+)==([^\s;]+)", r.strip())
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def test_environment_mirrors_pyproject(root):
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    pins = _pins(project["dependencies"] + project["optional-dependencies"]["test"])
    assert len(pins) == len(project["dependencies"]) + len(project["optional-dependencies"]["test"])
    env = yaml.safe_load((root / "environment.yml").read_text())
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    assert _pins(pip) == pins
    assert "-e ." in pip


def test_ruff_clean(root):
    local = Path(sys.executable).parent / "ruff"
    ruff = str(local) if local.exists() else shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    res = subprocess.run([ruff, "check", "src", "tests", "benchmarks", "workflow/scripts"],
                         cwd=root, capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr


def test_license_and_citation_files(root):
    """LICENSE carries the licence pyproject names; CITATION.cff is valid YAML citing the paper."""
    project = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert project["license"]["text"] == "MIT"
    assert (root / "LICENSE").read_text().startswith("MIT License")
    cff = yaml.safe_load((root / "CITATION.cff").read_text())
    assert cff["cff-version"] == "1.2.0" and cff["license"] == "MIT"
    assert cff["version"] == project["version"]
    paper = cff["references"][0]
    assert paper["title"] == "Bayes optimal learning of attention-indexed models"
    assert [a["family-names"] for a in paper["authors"]] == [
        "Boncoraglio", "Troiani", "Erba", "Zdeborová"]


def test_job_logs_have_no_empty_shell_command_lines(root):
    """Every rule but the target is a script rule, and no profile sets printshellcmds, which
    would print `Shell command: None` for each (the quick preset's run is checked for the line
    itself: tests/test_workflow.py)."""
    import re

    bodies = []
    for smk in sorted((root / "workflow" / "rules").glob("*.smk")):
        lines = smk.read_text().splitlines()
        for i, line in enumerate(lines):
            m = re.match(r"^(\s*)rule(?: \w+)?:$", line)
            if not m:
                continue
            # the rule's block: the lines indented deeper than its header
            end = next((k for k, ln in enumerate(lines[i + 1:]) if ln.strip() and
                        len(ln) - len(ln.lstrip()) <= len(m.group(1))), len(lines) - i - 1)
            bodies.append((f"{smk.name}:{i + 1}", "\n".join(lines[i + 1:i + 1 + end])))
    assert len(bodies) == 9  # se_curve, se_small_width, theory, data and aggregate (per
    # algorithm), finite_size, recovery, figure, config_record
    for where, body in bodies:
        assert re.search(r"^\s+script:", body, re.M), where
        assert not re.search(r"^\s+(shell|run):", body, re.M), where
    for prof in ("default", "slurm"):
        conf = yaml.safe_load((root / "profiles" / prof / "config.yaml").read_text())
        assert "printshellcmds" not in conf


def test_theory_sections_cited_exist(root):
    """Every `docs/theory.md §n` cited in the sources is a section of docs/theory.md."""
    import re

    theory = (root / "docs" / "theory.md").read_text()
    sections = set(re.findall(r"^##+ (\d+(?:\.\d+)?)\.? ", theory, flags=re.M))
    cited = set()
    for path in [*(root / "src" / "aimlib").rglob("*.py"), *(root / "config").glob("*.yaml")]:
        cited |= set(re.findall(r"docs/theory\.md §(\d+(?:\.\d+)?)", path.read_text()))
    assert cited and cited <= sections, cited - sections


#: The layers of aimlib's ``__init__`` docstring, from the bottom.
LAYERS = [
    {"core"},
    {"prior", "channels", "tokens"},
    {"model", "theory"},
    {"algorithms"},
    {"pipeline", "figures"},
    {"cli", "__main__"},
]


def test_modules_import_only_downward(root):
    """Every module is in one layer and imports (at any depth, lazily too) only from its own
    layer or lower ones: the theory never reaches into the workflow, a channel never into the
    algorithms."""
    from aimlib.pipeline.io import _imports

    pkg = root / "src" / "aimlib"
    names = sorted(".".join(p.relative_to(pkg).with_suffix("").parts).removesuffix(".__init__")
                   for p in pkg.rglob("*.py") if p.name != "__init__.py" or p.parent != pkg)

    def layer(name):
        top = name.split(".")[0]
        return next(i for i, group in enumerate(LAYERS) if top in group)

    bad = []
    for name in names:
        for dep in _imports(name):
            if layer(dep) > layer(name):
                bad.append(f"{name} -> {dep}")
    assert not bad, bad
    assert {n.split(".")[0] for n in names} == set().union(*LAYERS)


def test_import_graph_has_no_cycle(root):
    """No module reaches itself through imports, lazy ones (inside functions) included."""
    from aimlib.pipeline.io import _imports

    pkg = root / "src" / "aimlib"
    names = sorted(".".join(p.relative_to(pkg).with_suffix("").parts).removesuffix(".__init__")
                   for p in pkg.rglob("*.py") if p.name != "__init__.py" or p.parent != pkg)
    graph = {n: {d for d in _imports(n) if d != n} for n in names}
    state, cycles = {}, []

    def visit(n, path):
        state[n] = "open"
        for d in sorted(graph.get(d_ := n, ())):
            if state.get(d) == "open":
                cycles.append(" -> ".join(path[path.index(d):] + [d]) if d in path
                              else f"{d_} -> {d}")
            elif d not in state:
                visit(d, path + [d])
        state[n] = "done"

    for n in names:
        if n not in state:
            visit(n, [n])
    assert not cycles, cycles


def test_no_private_name_imported_across_modules(root):
    """``from .x import _name`` only inside one module's own package of helpers: no module
    imports another's private names."""
    import ast

    bad = []
    for path in (root / "src" / "aimlib").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or (node.module or "")
                                                    .startswith("aimlib")):
                bad += [f"{path.name}: {a.name} from {node.module}" for a in node.names
                        if a.name.startswith("_") and not a.name.startswith("__")]
    assert not bad, bad


def test_no_two_modules_share_a_name(root):
    """Every module of the package has a name of its own (the normal-distribution functions
    are ``core.normal``, the Gaussian channel ``channels.gaussian``)."""
    from collections import Counter

    pkg = root / "src" / "aimlib"
    names = Counter(p.stem for p in pkg.rglob("*.py") if p.name != "__init__.py")
    assert [n for n, k in names.items() if k > 1] == []


def test_the_public_names_are_the_modules_and_old_paths_are_gone():
    """``from aimlib import amp, gd, model, prior, state_evolution`` gives the modules (imported
    on first use, so ``import aimlib`` stays light); the old flat paths (``aimlib.io``,
    ``aimlib.config``) and the import hook that served them are gone."""
    import importlib
    import subprocess
    import sys

    import aimlib
    from aimlib import amp, gd, model, prior, state_evolution
    from aimlib.algorithms import amp as amp_new

    assert amp is amp_new and gd.__name__ == "aimlib.algorithms.gd"
    assert state_evolution.__name__ == "aimlib.theory.state_evolution"
    assert model.__name__ == "aimlib.model" and prior.__name__ == "aimlib.prior"
    for old in ("io", "config", "cost", "options", "captions", "mismatched"):
        with pytest.raises(ModuleNotFoundError):
            importlib.import_module(f"aimlib.{old}")
        with pytest.raises(AttributeError):
            getattr(aimlib, old)
    assert not [f for f in sys.meta_path if type(f).__module__ == "aimlib"]
    # a bare `import aimlib` loads none of the numerics
    out = subprocess.run([sys.executable, "-c", "import sys, aimlib; print(sorted(m for m in "
                          "sys.modules if m.startswith(('aimlib.', 'numba', 'numpy'))))"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_xdist_groups_share_one_worker(tmp_path):
    """The suite's mini workflow is built once because its tests share an ``xdist_group``
    (tests/test_incremental.py). Under pytest 9.2, --dist loadgroup silently stopped grouping
    (pytest-dev/pytest-xdist#1386) and two workers each built it: the pinned pair must group."""
    out = tmp_path / "out"
    out.mkdir()
    (tmp_path / "test_grouped.py").write_text(
        "import os\nimport pytest\n"
        "pytestmark = pytest.mark.xdist_group('g')\n"
        + "".join(f"def test_{i}():\n"
                  f"    with open(os.path.join(os.environ['OUT'], 'worker_{i}'), 'w') as f:\n"
                  f"        f.write(os.environ['PYTEST_XDIST_WORKER'])\n" for i in range(6)))
    res = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "--dist", "loadgroup",
                          "-p", "no:cacheprovider", str(tmp_path / "test_grouped.py")],
                         cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "OUT": str(out)})
    assert res.returncode == 0, res.stdout[-2000:]
    workers = {(out / f"worker_{i}").read_text() for i in range(6)}
    assert len(workers) == 1, workers


@pytest.mark.parametrize("module", ["aimlib.pipeline.jobs", "aimlib.pipeline.tracking",
                                    "aimlib.pipeline.paths", "aimlib.pipeline.io"])
def test_what_job_scripts_import_first_stays_light(module):
    """Every job script imports ``aimlib.pipeline.jobs`` (and with it tracking, paths, io) before
    its thread limits are set and before the numerics: those modules load no numba, scipy,
    xarray or matplotlib (a hoisted import once made every job pay ~1 s for them)."""
    import subprocess
    import sys

    code = (f"import sys, {module}; print(sorted(m for m in ('numba', 'scipy', 'xarray', "
            "'matplotlib') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout.strip()
    assert out == "[]", (module, out)


def test_a_benchmark_without_a_parser_answers_help_and_refuses_arguments(root):
    """`python benchmarks/bench_se.py --help` prints its docstring and leaves its table alone;
    an argument it does not take is refused before it measures anything."""
    import subprocess
    import sys

    readme = (root / "benchmarks" / "README.md").read_bytes()
    script = str(root / "benchmarks" / "bench_se.py")
    res = subprocess.run([sys.executable, script, "--help"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and res.stdout.startswith("State-evolution benchmarks"), res
    res = subprocess.run([sys.executable, script, "--d", "60"], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 1 and "takes no arguments (got --d 60)" in res.stderr, res
    assert (root / "benchmarks" / "README.md").read_bytes() == readme
