"""The ``aimlib`` command line: quick answers from a shell, without writing Python.

    aimlib se hardmax --rho 0.5 --alpha 0.4583
    aimlib se softmax --rho 0.5 --T 3 --alpha-bar 0.2 0.5 0.8
    aimlib se hardmax --rho 0.5 --grid 0.03 8 32 --log --variant density --format csv
    aimlib thresholds --rho 0.2 0.5 2
    aimlib mmse --rho 0.5 --delta 0.01 0.1 1
    aimlib se gaussian --rho 0.5 --T 1 --delta 0.1 --alpha 0.2 0.4
    aimlib amp hardmax --rho 0.5 --alpha 0.4583 --d 100 --seed 0
    aimlib gd --rho 0.5 --alpha-bar 0.5 --T 2 --d 60 --seed 0 --inits 32
    aimlib spectral hardmax --rho 0.5 --alpha 1 --d 300 --seed 0

Every subcommand prints a table by default; ``--format csv`` writes comma-separated values and
``--format netcdf --output FILE`` an xarray/netCDF file (SE curves).  ``python -m aimlib`` is the
same program.  The equations behind each number are in ``docs/theory.md``.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import difflib
import os
import re
import sys
import time

import numpy as np

from aimlib import __version__
from aimlib.channels import CHANNELS as _REGISTRY
from aimlib.channels import channel_class, make_channel
from aimlib.core.options import flag
from aimlib.model import ATTENTIONS
from aimlib.prior import DEFAULT as DEFAULT_PRIOR
from aimlib.prior import PRIORS, make_prior

__all__ = ["build_parser", "main", "se_figure", "reference_markdown"]

CHANNELS = tuple(_REGISTRY)


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Examples kept as written; ``(default: X)`` after an option's help only where there is a
    default worth stating: not on required arguments, flags, ``None`` defaults or help text
    that already says its default."""

    def _get_help_string(self, action):
        text = action.help or ""
        if (action.required or action.default in (None, False, argparse.SUPPRESS)
                or "default" in text or not action.option_strings):
            return text
        return f"{text} (default: %(default)s)"


# ------------------------------------------------------------------------------------- output


def _emit(rows: list[dict], fmt: str, out, floatfmt: str = ".6g") -> None:
    """Print ``rows`` (dicts with the same keys) as an aligned table or as CSV."""
    if not rows:
        return
    keys = list(rows[0])

    def cell(v):
        if isinstance(v, bool | np.bool_):
            return "yes" if v else "no"
        if isinstance(v, float | np.floating):
            return format(float(v), floatfmt)
        return str(v)

    cells = [[cell(r[k]) for k in keys] for r in rows]
    if fmt == "csv":
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(keys)
        writer.writerows(cells)
        return
    width = [max(len(k), *(len(c[i]) for c in cells)) for i, k in enumerate(keys)]
    left = [isinstance(rows[0][k], str) for k in keys]  # text left, numbers right

    def line(vals):
        return "  ".join(v.ljust(w) if lf else v.rjust(w)
                         for v, w, lf in zip(vals, width, left, strict=True)).rstrip()

    print(line(keys), file=out)
    for c in cells:
        print(line(c), file=out)


@contextlib.contextmanager
def _open_out(args):
    """``--output FILE`` if given (closed afterwards), else stdout (left open)."""
    if getattr(args, "output", None):
        with open(args.output, "w") as f:
            yield f
    else:
        yield sys.stdout


# ----------------------------------------------------------------------------------- alphas


def _channel(args, variant: str | None = None):
    """The channel object of the command line, made once: ``--channel``, ``--T`` and its
    parameter (``--beta``, ``--delta``; a parameter of another channel is rejected unless it
    is left at its default), with ``variant`` where the command has one."""
    params = {k: getattr(args, k) for k in sorted({c.PARAM for c in _REGISTRY.values()} - {None})
              if getattr(args, k, None) is not None}
    if variant is not None and variant in channel_class(args.channel).VARIANTS:
        params["variant"] = variant
    return make_channel(args.channel, T=args.T, **params)


def _alphas(args, channel, rho: float) -> np.ndarray:
    """The sample ratios alpha = n / d^2 asked for, from --alpha, --alpha-bar (the cell's
    scale, docs/theory.md §15.6) or --grid."""
    # loaded by the subcommand that runs (aimlib --help stays light)
    from aimlib.theory.cells import alpha_bar_factor

    if args.grid is not None:
        lo, hi, num = args.grid
        if not (lo > 0 and hi > lo and num >= 1 and float(num).is_integer()):
            raise ValueError("--grid needs START > 0, STOP > START and an integer NUM >= 1")
        vals = (np.geomspace if args.log else np.linspace)(lo, hi, int(num))
        bar = args.grid_in == "alpha_bar"
    elif args.alpha_bar is not None:
        vals, bar = np.asarray(args.alpha_bar, dtype=float), True
    else:
        vals, bar = np.asarray(args.alpha, dtype=float), False
    if np.any(~(vals > 0)):
        raise ValueError("every alpha must be > 0")
    factor = alpha_bar_factor(channel, rho, prior=args.prior, attention=_attention(args))
    return vals / factor if bar else vals


def _attention(args) -> str:
    return getattr(args, "attention", "self")


def _add_attention_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--attention", choices=ATTENTIONS, default="self",
                   help="self (the paper's) or cross (T queries against T keys of a second "
                        "sequence); with --prior untied, the cells of docs/theory.md §15")


def _add_alpha_args(p: argparse.ArgumentParser, required: bool = True) -> None:
    g = p.add_mutually_exclusive_group(required=required)
    g.add_argument("--alpha", type=float, nargs="+", metavar="A",
                   help="sample ratio alpha = n / d^2 (one or several)")
    g.add_argument("--alpha-bar", type=float, nargs="+", metavar="AB",
                   help="rescaled ratio: alpha (T^2 + T - 2) for softmax, c_T alpha / rho for "
                        "hardmax (c_2 = 1, c_3 = 2.30, c_4 = 3.84), alpha T (T + 1) for "
                        "gaussian")
    g.add_argument("--grid", type=float, nargs=3, metavar=("START", "STOP", "NUM"),
                   help="a grid of NUM points from START to STOP (see --log, --grid-in)")
    p.add_argument("--log", action="store_true", help="geometric instead of linear --grid")
    p.add_argument("--grid-in", choices=("alpha", "alpha_bar"), default="alpha",
                   help="what the --grid values are")


def _T_help(names) -> str:
    """``--T``'s help for the channels ``names``: each one's smallest T (and largest, if any)."""
    parts = []
    for c in names:
        cls = _REGISTRY[c]
        rng = f"{cls.T_MIN}" if cls.T_MAX == cls.T_MIN else (
            f"{cls.T_MIN}, at most {cls.T_MAX}" if cls.T_MAX else f"{cls.T_MIN}")
        parts.append(f"{c} {rng}")
    return "tokens per sequence (default: the channel's smallest: " + "; ".join(parts) + ")"


def _add_model_args(p: argparse.ArgumentParser, channel: bool = True,
                    choices=None) -> None:
    choices = list(choices or CHANNELS)
    if channel:
        p.add_argument("channel", choices=choices, help="output channel")
    else:
        p.add_argument("--channel", default=choices[0], choices=choices,
                       help="output channel")
    p.add_argument("--rho", type=float, required=True, help="width ratio r / d")
    _add_prior_arg(p)
    p.add_argument("--T", type=int, default=None, help=_T_help(choices))
    if any(_REGISTRY[c].PARAM == "beta" for c in choices):
        p.add_argument("--beta", type=float, default=None,
                       help="softmax inverse temperature (default: 1; SE does not depend on it)")
    if any(_REGISTRY[c].PARAM == "delta" for c in choices):
        p.add_argument("--delta", type=float, default=None,
                       help="gaussian channel: noise variance Delta >= 0 (default: 0)")


def _add_prior_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prior", choices=tuple(PRIORS), default=DEFAULT_PRIOR,
                   help="the teacher's prior: " + "; ".join(f"{k}: {c.label}"
                                                           for k, c in PRIORS.items()))


def _add_run_args(p: argparse.ArgumentParser) -> None:
    """Sample ratios, size, seeds and progress of a run on data drawn from a seed."""
    _add_alpha_args(p)
    p.add_argument("--d", type=int, required=True, help="dimension")
    p.add_argument("--seed", type=int, default=0, help="teacher/data seed")
    p.add_argument("--base-seed", type=int, default=0, help="the configuration's base seed")
    p.add_argument("--progress", action="store_true", help="progress bar on stderr")


# -------------------------------------------------------------------------------- commands


def _cmd_se(args) -> int:
    # loaded by the subcommand that runs (aimlib --help stays light)
    from aimlib.theory import cells, mismatched
    from aimlib.theory import state_evolution as se

    ch = _channel(args, args.variant)
    cells.check_cell(args.prior, args.attention, ch.T, ch.name)
    alphas = _alphas(args, ch, args.rho)
    if not cells.is_paper(args.prior, args.attention):
        if args.variant != "exact":
            raise ValueError(f"--variant {args.variant} is the paper's tied self-attention's")
        ds = cells.curve(ch, alphas, args.rho, prior=args.prior, attention=args.attention)
    elif args.variant == "mismatched":
        if args.channel != "hardmax" or (args.T or 2) != 2 or args.prior != DEFAULT_PRIOR:
            raise ValueError("--variant mismatched is the hardmax T = 2 channel's, with the "
                             "tied prior")
        ds = mismatched.curve(alphas, args.rho)
    else:
        ds = se.curve(ch, alphas, args.rho, prior=args.prior)
    if args.format == "netcdf":
        if not args.output:
            raise ValueError("--format netcdf needs --output FILE")
        # loaded by the subcommand that runs (aimlib --help stays light)
        from aimlib.pipeline.io import write_netcdf

        write_netcdf(ds, args.output, config={"command": "aimlib " + " ".join(args.argv)},
                     version=__version__)
        print(f"wrote {args.output} ({ds.sizes['alpha']} points)", file=sys.stderr)
        return 0
    abar = ds["alpha_bar"].values if "alpha_bar" in ds.coords else \
        se.alpha_bar(ch, alphas, args.rho)
    rows = []
    for i, a in enumerate(alphas):
        row = {"alpha": float(a), "alpha_bar": float(abar[i])}
        if "error" not in ds:  # untied self-attention: its two bounds (docs/theory.md §15.4)
            row.update(error_lower=float(ds["error_lower"].values[i]),
                       error_upper=float(ds["error_upper"].values[i]),
                       converged=bool(se.usable(ds)[i]))
            rows.append(row)
            continue
        row["error"] = float(ds["error"].values[i])
        if args.variant == "mismatched":
            row.update(m=float(ds["m"].values[i]), Q=float(ds["Q"].values[i]))
        else:
            row.update(q=float(ds["q"].values[i]), q_hat=float(ds["q_hat"].values[i]),
                       error_informed=float(ds["error_informed"].values[i]))
        row["converged"] = bool(ds["converged"].values[i])
        rows.append(row)
    with _open_out(args) as out:
        _emit(rows, args.format, out)
    if args.plot:
        _plot_se(rows, args)
    return 0


def se_figure(rows: list[dict], label: str):
    """The figure ``aimlib se --plot`` saves: the printed rows' error against alpha_bar, a line
    through the converged points and hollow circles at the others."""
    import matplotlib.pyplot as plt  # matplotlib only when drawing (importing it costs ~0.3 s)

    x = np.array([r["alpha_bar"] for r in rows], dtype=float)
    y = np.array([r["error"] for r in rows], dtype=float)
    ok = np.array([r["converged"] for r in rows], dtype=bool)
    fig, ax = plt.subplots(figsize=(4.5, 3.4), layout="constrained")
    ax.plot(x[ok], y[ok], "-o" if len(x) <= 40 else "-", ms=3, label=label)
    if (~ok).any():
        ax.plot(x[~ok], y[~ok], "o", mfc="none", ms=5, label="not converged")
    ax.set_xlabel(r"$\bar\alpha$")
    ax.set_ylabel("estimation error")
    if len(x) > 1 and x.max() / x.min() > 20:
        ax.set_xscale("log")
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=8)
    return fig


def _plot_se(rows: list[dict], args) -> None:
    """``aimlib se ... --plot FILE``: :func:`se_figure` of the rows just printed."""
    import matplotlib  # matplotlib only when drawing (importing it costs ~0.3 s)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # matplotlib only when drawing (importing it costs ~0.3 s)

    variant = "" if args.variant == "exact" else f" ({args.variant})"
    T = f", T = {args.T}" if args.T else ""
    fig = se_figure(rows, f"SE {args.channel}{variant}, rho = {args.rho:g}{T}")
    fig.savefig(args.plot, dpi=150)
    plt.close(fig)
    print(f"wrote {args.plot}", file=sys.stderr)


def _cmd_thresholds(args) -> int:
    # loaded by the subcommand that runs (aimlib --help stays light)
    from aimlib.theory import state_evolution as se

    rows = []
    for rho in args.rho:
        rows.append({"quantity": "softmax perfect recovery alpha_bar_c "
                                 "(2 rho - rho^2 for rho <= 1, else 1)",
                     "rho": rho, "value": se.softmax_perfect_recovery_threshold(rho)})
    for variant in ("exact", "density"):
        rows.append({"quantity": f"hardmax small-width weak recovery, {variant} g_out",
                     "rho": "rho->0", "value": se.small_width_threshold(variant)})
    with _open_out(args) as out:
        _emit(rows, args.format, out, ".10g")
    return 0


def _cmd_mmse(args) -> int:
    pr = make_prior(args.prior, args.rho)
    rows = [{"rho": args.rho, "delta": d, "mmse": float(pr.mmse(d)), "Q0": pr.second_moment}
            for d in args.delta]
    with _open_out(args) as out:
        _emit(rows, args.format, out, ".10g")
    return 0


def _cmd_schema(args) -> int:
    # loaded by the subcommand that runs (aimlib --help stays light)
    from aimlib.pipeline.checks import schema_text

    sys.stdout.write(schema_text(args.source))
    return 0


def _cmd_algorithm(args) -> int:
    """``aimlib <algorithm>``: one run per alpha on data drawn from ``--seed``, next to SE (and
    the algorithm's own prediction where it has one); exit status 3 if a run did not converge."""
    from aimlib import model  # loaded by the subcommand that runs (aimlib --help stays light)
    from aimlib.algorithms import ALGORITHMS
    from aimlib.theory.cells import check_cell

    alg = ALGORITHMS[args.command]
    variant = getattr(args, "variant", "exact")
    ch = _channel(args, variant)
    alg.check_point(ch.name, args.d, ch.T)
    cell = (args.prior, _attention(args))
    alg.check_cell(cell)
    check_cell(*cell, ch.T, ch.name)
    alphas = _alphas(args, ch, args.rho)
    opts = alg.validate({k: getattr(args, k) for k in alg.option_names() if hasattr(args, k)},
                        name=flag)
    if "backend" in opts:  # before any data is drawn: the package and, here, the GPU
        # loaded by the subcommand that runs (aimlib --help stays light)
        from aimlib.core.backend import check

        check(opts["backend"], "--backend")
    rows = []
    for a in alphas:
        data = model.generate(ch, float(a), args.rho, None, args.d, args.seed,
                              base_seed=args.base_seed, prior=args.prior, attention=cell[1])
        t0 = time.perf_counter()
        res = alg.run(data, variant=variant, progress=args.progress or None, **opts)
        wall = time.perf_counter() - t0
        ref = alg.reference(ch, float(a), data.prior, cell[1])
        rows.append({"alpha": float(a), "d": args.d, "seed": args.seed, "n": data.n,
                     **alg.cli_row(res), **ref, "seconds": round(wall, 2)})
    with _open_out(args) as out:
        _emit(rows, args.format, out)
    return 0 if all(r.get("converged", True) for r in rows) else 3


# ---------------------------------------------------------------------------------- parser


class _Parser(argparse.ArgumentParser):
    """argparse with the closest valid name in its errors: a misspelt option (``--alpah``) is
    named before argparse would complain about a required option it hides, and an invalid
    choice (``softmx``) gets a suggestion."""

    def parse_known_args(self, args=None, namespace=None):
        if args is not None and not any(isinstance(a, argparse._SubParsersAction)
                                        for a in self._actions):
            known = [o for a in self._actions for o in a.option_strings if o.startswith("--")]
            for token in args:
                if token == "--":
                    break
                if not token.startswith("--"):
                    continue
                name = token.split("=", 1)[0]
                if not any(o.startswith(name) for o in known):  # argparse takes prefixes
                    self.error(f"unrecognized option {name}{_did_you_mean(name, known)}")
        return super().parse_known_args(args, namespace)

    def error(self, message):
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            choices = re.findall(r"'([^']*)'", m.group(2))
            message += _did_you_mean(m.group(1), choices)
        super().error(message)


def _did_you_mean(word: str, options) -> str:
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.5)
    return f"; did you mean {close[0]}?" if close else ""


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="aimlib", formatter_class=_Formatter,
        description="Bayes-optimal learning of attention-indexed models from the shell: state "
                    "evolution (SE), thresholds, the prior's MMSE, one AMP or GD run.",
        epilog="examples:\n" + __doc__.split("\n\n", 2)[1])
    parser.add_argument("--version", action="version", version=f"aimlib {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def output_args(p, netcdf=False):
        p.add_argument("--format", choices=("table", "csv", "netcdf") if netcdf
                       else ("table", "csv"), default="table", help="output format")
        p.add_argument("--output", "-o", metavar="FILE", help="write to FILE instead of stdout")

    p = sub.add_parser(
        "se", formatter_class=_Formatter,
        help="SE fixed point(s): the Bayes-optimal error at one or more alphas",
        description="State-evolution fixed points. The error is the Bayes-optimal estimation "
                    "error Q0 - q reached from the uninformed start (what AMP reaches); "
                    "error_informed starts near perfect recovery (the two differ at a "
                    "first-order transition).",
        epilog="examples:\n  aimlib se hardmax --rho 0.5 --alpha 0.4583\n"
               "  aimlib se softmax --rho 0.5 --T 3 --grid 0.05 1.2 24 --grid-in alpha_bar\n"
               "  aimlib se hardmax --rho 0.5 --alpha 0.45 2 --variant mismatched\n"
               "  aimlib se softmax --rho 0.5 --alpha 0.2 --prior untied --attention self")
    _add_model_args(p)
    _add_attention_arg(p)
    _add_alpha_args(p)
    p.add_argument("--variant", choices=("exact", "density", "mismatched"), default="exact",
                   help="hardmax output function: exact; the published bivariate-normal density "
                        "(the paper's curves); mismatched = the SE of AMP run with that density "
                        "on data from the true model")
    output_args(p, netcdf=True)
    p.add_argument("--plot", metavar="FILE",
                   help="also draw the curve it prints (error against alpha_bar) into FILE "
                        "(.png, .pdf, .svg)")
    p.set_defaults(func=_cmd_se)

    p = sub.add_parser("thresholds", formatter_class=_Formatter,
                       help="closed-form thresholds: softmax perfect recovery, hardmax small width",
                       description="Thresholds that need no iteration: the softmax "
                                   "perfect-recovery alpha_bar_c(rho) and the weak-recovery "
                                   "threshold of the hardmax small-width limit.",
                       epilog="examples:\n  aimlib thresholds --rho 0.2 0.5 2")
    p.add_argument("--rho", type=float, nargs="+", default=[0.5], help="width ratio(s)")
    output_args(p)
    p.set_defaults(func=_cmd_thresholds)

    p = sub.add_parser("mmse", formatter_class=_Formatter,
                       help="the prior's MMSE for S* + sqrt(delta) Z",
                       description="Matrix denoising MMSE of the prior of width ratio rho "
                                   "observed in Gaussian noise of variance delta (GOE for the "
                                   "tied prior, i.i.d. entries for the untied one).",
                       epilog="examples:\n  aimlib mmse --rho 0.5 --delta 0.01 0.1 1\n"
                              "  aimlib mmse --rho 0.5 --prior untied --delta 0.1 1")
    p.add_argument("--rho", type=float, required=True, help="width ratio r / d")
    _add_prior_arg(p)
    p.add_argument("--delta", type=float, nargs="+", required=True, help="noise variance(s)")
    output_args(p)
    p.set_defaults(func=_cmd_mmse)

    p = sub.add_parser("schema", formatter_class=_Formatter,
                       help="the workflow's configuration schema, completed from the registries",
                       description="Prints the JSON schema every config file is validated "
                                   "against (YAML): config/schema.yaml completed from the channel, "
                                   "token-law and algorithm registries, each option with its "
                                   "meaning, range and default. Run from the repository root; "
                                   "workflow/schemas/config.schema.yaml is its output.",
                       epilog="examples:\n  aimlib schema > workflow/schemas/config.schema.yaml")
    p.add_argument("--source", default="config/schema.yaml",
                   help="the hand-written part of the schema")
    p.set_defaults(func=_cmd_schema)

    # loaded by the subcommand that runs (aimlib --help stays light)
    from aimlib.algorithms import ALGORITHMS

    for name, alg in ALGORITHMS.items():
        p = sub.add_parser(name, formatter_class=_Formatter, help=alg.CLI_HELP,
                           description=alg.CLI_DESCRIPTION,
                           epilog="examples:\n  " + alg.CLI_EXAMPLE)
        fit = [k for k, c in _REGISTRY.items() if alg.supports(c)]
        _add_model_args(p, channel=len(fit) == len(_REGISTRY), choices=fit)
        _add_run_args(p)
        if any(a != "self" for _, a in alg.CELLS):
            _add_attention_arg(p)
        if alg.HAS_VARIANTS:
            p.add_argument("--variant", choices=("exact", "density"), default="exact",
                           help="hardmax output function")
        alg.add_cli_args(p)
        output_args(p)
        p.set_defaults(func=_cmd_algorithm)
    return parser


def reference_markdown() -> str:
    """The command line's reference as Markdown: ``aimlib --help`` and every subcommand's."""
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "100"
    try:
        parser = build_parser()
        lines = ["# Command line", "",
                 "`aimlib` (also `python -m aimlib`), generated from its parser.", "",
                 "```text", parser.format_help().rstrip(), "```", ""]
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        for name, p in sub.choices.items():
            lines += [f"## aimlib {name}", "", "```text", p.format_help().rstrip(), "```", ""]
    finally:
        if old is None:
            os.environ.pop("COLUMNS", None)
        else:
            os.environ["COLUMNS"] = old
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``aimlib`` console script; returns the exit status."""
    parser = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args = parser.parse_args(argv)
    args.argv = argv
    try:
        return int(args.func(args))
    except (ValueError, TypeError) as exc:
        parser.exit(2, f"aimlib {args.command}: error: {exc}\n")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


