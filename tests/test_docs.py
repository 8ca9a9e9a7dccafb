"""The docs site: built with warnings as errors, its generated references complete."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

from aimlib.cli import reference_markdown as cli_reference
from aimlib.pipeline.checks import schema
from aimlib.pipeline.reference import config_keys, figure_gallery


def test_every_config_key_is_documented(root):
    """The configuration reference has a type and a meaning for every key of the schema."""
    rows = config_keys(schema(root / "config" / "schema.yaml"))
    assert len(rows) > 80
    missing = [path for path, _, _, desc in rows if not desc]
    assert missing == []
    keys = {path for path, *_ in rows}
    for key in ("seed", "pause_long_runs", "experiments.<name>.amp.damping",
                "experiments.<name>.gd.stop", "experiments.<name>.amp.d_rho",
                "experiments.<name>.se.alpha.geomspace", "style.dpi"):
        assert key in keys, key
    defaults = {path: default for path, _, default, _ in rows}
    assert defaults["experiments.<name>.gd.inits"] == 32  # the library's default, once


def test_cli_and_figure_references_cover_everything():
    from aimlib.algorithms import ALGORITHMS
    from aimlib.figures.registry import FIGURES

    cli = cli_reference()
    for sub in ("se", "thresholds", "mmse", *ALGORITHMS):
        assert f"## aimlib {sub}" in cli
    assert "(default: None)" not in cli
    gallery = figure_gallery({})
    for name, spec in FIGURES.items():
        assert f"## {name}" in gallery and spec.paper in gallery


def test_mkdocs_build_strict(root, tmp_path):
    """`mkdocs build --strict`: every page, the API reference from the docstrings, the
    generated references, no warning."""
    mkdocs = Path(sys.executable).parent / "mkdocs"
    work = tmp_path / "repo"
    work.mkdir()
    for name in ("mkdocs.yml", "docs", "README.md", "config", "figures", "examples"):
        src = root / name
        if src.is_dir():
            shutil.copytree(src, work / name, ignore=shutil.ignore_patterns("generated"))
        else:
            shutil.copy(src, work / name)
    (work / "src").symlink_to(root / "src")
    res = subprocess.run([str(mkdocs), "build", "--strict", "--site-dir", str(tmp_path / "site")],
                         cwd=work, capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-3000:]
    site = tmp_path / "site"
    for page in ("index.html", "theory/index.html", "api/index.html",
                 "generated/configuration/index.html", "generated/cli/index.html",
                 "generated/figures/index.html", "workflow/index.html", "results/index.html",
                 "cost/index.html", "testing/index.html", "layout/index.html",
                 "generated/tutorial/index.html"):
        assert (site / page).is_file(), page
    api = (site / "api" / "index.html").read_text()
    assert "AMPResult" in api and "estimate" in api
    assert "arithmatex" in (site / "theory" / "index.html").read_text()  # rendered equations
    # offline: every script and stylesheet is the site's own (MathJax from a pinned package,
    # with the fonts and extensions it loads on demand), none from a network
    for page in site.rglob("*.html"):
        html = page.read_text()
        remote = re.findall(r'<(?:script|link)[^>]+(?:src|href)="(https?://[^"]+)"', html)
        assert not remote, (page, remote)
    theory = (site / "theory" / "index.html").read_text()
    assert 'src="../javascripts/mathjax/tex-mml-chtml.js"' in theory
    mj = site / "javascripts" / "mathjax"
    assert (mj / "tex-mml-chtml.js").stat().st_size > 1_000_000
    assert (mj / "output" / "chtml" / "fonts" / "woff-v2" / "MathJax_Main-Regular.woff").is_file()
    assert (mj / "input" / "tex" / "extensions" / "boldsymbol.js").is_file()
    # code blocks wrap instead of being cut at the right edge
    assert "white-space: pre-wrap" in (site / "stylesheets" / "extra.css").read_text()
