"""Snakemake job: draw one figure from its cached data."""

from aimlib import figures
from aimlib.io import read_cache
from aimlib.jobs import job_log

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    name = sm.wildcards.fig
    se = [read_cache(p) for p in sm.input.se]
    amp = [read_cache(p) for p in sm.input.amp]
    gd = [read_cache(p) for p in sm.input.gd]
    agd = [read_cache(p) for p in sm.input.agd]
    kw = dict(axes=sm.params.axes, style=sm.params.style)
    if name == "fig1a":
        fig = figures.fig1a(se, amp, **kw)
    elif name == "fig1b":
        fig = figures.fig1b(se, read_cache(sm.input.small_width), **kw)
    elif name == "fig2a":
        fig = figures.fig2a(se, **kw)
    elif name == "fig2b":
        fig = figures.fig2b(se, amp, gd, agd, **kw)
    elif name == "fig3":
        fs = [read_cache(p) for p in sm.input.finite_size]
        fig = figures.fig3(se, amp, agd, fs, **kw)
    elif name == "fig4":
        fig = figures.fig4(se, amp, gd, agd, **kw)
    elif name == "fig5":
        fig = figures.fig5(se, **kw)
    elif name == "fig6":
        fig = figures.fig6(se, amp, **kw)
    elif name == "fig7":
        fig = figures.fig7(se, amp, **kw)
    elif name == "fig8":
        fig = figures.fig8(se, amp, gd, agd, **kw)
    else:
        raise ValueError(f"no figure function for {name!r}")
    figures.save(fig, [sm.output.pdf, sm.output.png], dpi=sm.params.style.get("dpi"))
    log.info("wrote %s and %s", sm.output.pdf, sm.output.png)
