"""mkdocs hook: write the generated pages (docs/generated/, git-ignored) before the build.

- configuration.md: every config key from the completed schema;
- cli.md: ``aimlib --help`` and every subcommand's;
- figures.md: the figure registry with the README's images;
- tutorial.md: examples/tutorial.ipynb as a page (its cells, without outputs);

and adds MathJax to the site from a pinned package, so that equations render offline.
"""

from __future__ import annotations

import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "docs" / "generated"

#: The README's images of each figure, best first, with what each is.
IMAGES = {
    "fig1a": [("fig1a.png", "the paper preset's SE curves"),
              ("fig1a_paper_lite.png", "with AMP at the paper's sizes, 2 seeds")],
    "fig1b": [("fig1b.png", "the paper preset")],
    "fig2a": [("fig2a.png", "the paper preset")],
    "fig2b": [("fig2b_quick.png", "the quick preset")],
    "fig3": [("fig3_d1000.png", "config/finite_size_1000.yaml: d = 30 to 1000")],
    "fig4": [("fig4_paper_lite.png", "the paper's sizes, 2 seeds")],
    "fig5": [("fig5.png", "the paper preset")],
    "fig6": [("fig6_paper_lite.png", "the paper's sizes, 2 seeds")],
    "fig7": [("fig7_paper_lite.png", "the paper's sizes, 2 seeds")],
    "fig8": [("fig8_paper_lite.png", "the paper's sizes, 2 seeds")],
    "fig9": [("fig9_paper_lite.png", "config/paper_lite.yaml")],
    "fig_steps": [("fig_steps_paper_lite.png", "config/paper_lite.yaml")],
}


def _tutorial() -> str:
    """The tutorial notebook's cells as Markdown (the notebook itself is run by the tests)."""
    import json

    nb = json.loads((ROOT / "examples" / "tutorial.ipynb").read_text())
    out = ["!!! note \"Run it\"",
           "    This page is `examples/tutorial.ipynb`: open it in Jupyter to run it "
           "(`pip install -e '.[test]'` brings the kernel).", ""]
    for cell in nb["cells"]:
        src = "".join(cell["source"])
        if cell["cell_type"] == "markdown":
            out += [src, ""]
        else:
            out += ["```python", src, "```", ""]
    return "\n".join(out)


def on_pre_build(config, **kwargs) -> None:
    from aimlib.cli import reference_markdown as cli_reference
    from aimlib.pipeline.reference import config_reference, figure_gallery

    OUT.mkdir(parents=True, exist_ok=True)
    img = OUT / "img"
    img.mkdir(exist_ok=True)
    for src in sorted((ROOT / "figures" / "readme").glob("*.png")):  # the results page's too
        shutil.copy(src, img / src.name)
    images = {}
    for fig, entries in IMAGES.items():
        for name, caption in entries:
            src = ROOT / "figures" / "readme" / name
            if src.exists():
                shutil.copy(src, img / name)
                images.setdefault(fig, []).append((f"img/{name}", caption))
    pages = {
        "configuration.md": config_reference(ROOT / "config" / "schema.yaml"),
        "cli.md": cli_reference(),
        "figures.md": figure_gallery(images),
        "tutorial.md": _tutorial(),
    }
    for name, text in pages.items():
        path = OUT / name
        if not path.exists() or path.read_text() != text:  # keep mtimes for `mkdocs serve`
            path.write_text(text)


#: MathJax 3 as served by the site itself (no CDN: the equations render offline), from the
#: pinned ``sphinx-mathjax-offline`` package's copy: the TeX-to-HTML bundle and what it loads
#: on demand (TeX extensions, fonts, the menu and its accessibility tools).
MATHJAX_PARTS = ("tex-mml-chtml.js", "input/", "output/chtml", "ui/", "a11y/", "sre/",
                 "adaptors/")


def _mathjax_dir() -> Path:
    from importlib.metadata import distribution

    dist = distribution("sphinx-mathjax-offline")
    bundle = next(f for f in dist.files if f.name == "tex-mml-chtml.js")
    return Path(dist.locate_file(bundle)).parent


def on_files(files, config, **kwargs):
    """Add MathJax's files to the site under ``javascripts/mathjax/``."""
    from mkdocs.structure.files import File

    src = _mathjax_dir()
    for path in sorted(src.rglob("*")):
        rel = path.relative_to(src).as_posix()
        if path.is_file() and rel.startswith(MATHJAX_PARTS):
            files.append(File.generated(config, f"javascripts/mathjax/{rel}",
                                        abs_src_path=str(path)))
    return files
