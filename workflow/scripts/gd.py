"""Snakemake job: GD / AGD at one point (channel, T, parameter, rho, d, alpha), every seed.

Each seed's teacher data are drawn here from the base seed and the point (bit for bit the same
as :func:`aimlib.model.generate` gives anywhere), so the point needs no teacher files.
"""

import sys

from aimlib import gd, generalisation, model
from aimlib.aggregate import stack_seeds
from aimlib.io import write_netcdf
from aimlib.jobs import job_log, progress_bar, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    w = sm.wildcards
    job = sm.params.job
    opts = dict(job["options"])
    runs = []
    for seed in job["seeds"]:
        data = model.generate(w.channel, float(w.alpha), float(w.rho), int(w.T), int(w.d), seed,
                              base_seed=int(sm.params.base_seed), **job["channel_params"])
        log.info("GD %s T=%d %s rho=%g d=%d alpha=%g seed=%d n=%d, options %s", data.channel,
                 data.T, w.cpar, data.rho, data.d, data.alpha, seed, data.n, opts)
        with progress_bar(sys.stderr, int(opts["steps"]), f"Adam steps, seed {seed}") as bar:

            def progress(t, loss, bar=bar):
                log.info("step %5d  mean loss %.6e", t, loss)
                bar.n = t
                bar.set_postfix(loss=f"{loss:.3e}", refresh=False)
                bar.refresh()

            res = gd.run(data, progress=progress, **opts)
        log.info("seed %d: GD error %.6f, AGD error %.6f over %d initialisations", seed,
                 res.errors[0], res.error, len(res.errors))
        # each estimate on fresh samples, next to the prediction from its overlaps (fig8)
        ev = {k: generalisation.evaluate(data, S) for k, S in (("gd", res.S_first),
                                                                ("agd", res.S_avg))}
        for k, e in ev.items():
            log.info("seed %d: %s test error %.5f +- %.5f (Gaussian prediction from m = %.4f, "
                     "Q = %.4f: %.5f)", seed, k.upper(), e.measured, e.measured_sem, e.m, e.Q,
                     e.predicted)
        runs.append(res.to_dataset().assign(
            Q0=ev["gd"].Q0, **{f"{name}_{k}": float(getattr(e, attr)) for k, e in ev.items()
                               for name, attr in (("m", "m"), ("Q", "Q"),
                                                  ("test_error", "measured"),
                                                  ("test_error_sem", "measured_sem"),
                                                  ("test_error_pred", "predicted"))}))
    ds = stack_seeds(runs, job["seeds"])
    ds.attrs.update(channel=w.channel, variant=w.variant, T=int(w.T), rho=float(w.rho),
                    d=int(w.d), alpha=float(w.alpha), n=data.n,
                    **{"beta": data.beta, **job["channel_params"]},
                    **{f"gd_{k}": v for k, v in opts.items()})
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)
