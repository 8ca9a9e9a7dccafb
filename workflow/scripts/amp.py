"""Snakemake job: AMP at one point (channel, variant, T, parameter, rho, d, alpha), every seed.

Each seed's teacher data are drawn here from the base seed and the point (bit for bit the same
as :func:`aimlib.model.generate` gives anywhere), so the point needs no teacher files.
"""

import sys

import numpy as np

from aimlib import amp, generalisation, model
from aimlib.aggregate import stack_seeds
from aimlib.io import write_netcdf
from aimlib.jobs import job_log, progress_bar, resolved_config

sm = snakemake  # noqa: F821  (injected by Snakemake)

with job_log(sm.log[0], threads=sm.threads) as log:
    w = sm.wildcards
    job = sm.params.job
    opts = dict(job["options"])
    seeds = job["seeds"]
    runs = []
    for seed in seeds:
        data = model.generate(w.channel, float(w.alpha), float(w.rho), int(w.T), int(w.d), seed,
                              base_seed=int(sm.params.base_seed), **job["channel_params"])
        log.info("AMP %s (%s) T=%d rho=%g d=%d alpha=%g seed=%d n=%d, options %s",
                 data.channel, w.variant, data.T, data.rho, data.d, data.alpha, seed, data.n,
                 opts)
        with progress_bar(sys.stderr, int(opts["max_iter"]), f"AMP iterations, seed {seed}") \
                as bar:

            def progress(it, err, step, q_hat, bar=bar):
                bar.update(1)
                bar.set_postfix(error=f"{err:.4f}", step=f"{step:.1e}", refresh=False)
                if it == 1 or it % 10 == 0:
                    log.info("iteration %4d  error %.6f  step %.3e  q_hat %.5g", it, err, step,
                             q_hat)

            res = amp.run(data, variant=w.variant, progress=progress, **opts)
        log.info("seed %d: error %.6f after %d iterations (%d in all), %s, damping %.3f, "
                 "restarts %d", seed, res.error, res.iterations, res.total_iterations,
                 res.stop_reason, res.damping, res.restarts)
        one = res.to_dataset()
        if np.all(np.isfinite(res.S_hat)):
            # the estimate on fresh samples, next to the prediction from its overlaps (fig8)
            ev = generalisation.evaluate(data, res.S_hat)
            one = one.assign(m=ev.m, Q=ev.Q, Q0=ev.Q0, test_error=ev.measured,
                             test_error_sem=ev.measured_sem, test_error_pred=ev.predicted)
            log.info("seed %d: test error %.5f +- %.5f on %d fresh samples (Gaussian prediction "
                     "from m = %.4f, Q = %.4f: %.5f)", seed, ev.measured, ev.measured_sem,
                     generalisation.N_TEST, ev.m, ev.Q, ev.predicted)
        else:
            one = one.assign(**{k: np.nan for k in ("m", "Q", "Q0", "test_error",
                                                    "test_error_sem", "test_error_pred")})
        runs.append(one)
    ds = stack_seeds(runs, seeds)
    ds.attrs.update(channel=w.channel, variant=w.variant, T=int(w.T), rho=float(w.rho),
                    d=int(w.d), alpha=float(w.alpha), n=data.n,
                    **{"beta": data.beta, **job["channel_params"]},
                    stop_reasons=" ".join(amp.STOP_REASONS),
                    **{f"amp_{k}": v for k, v in opts.items()})
    write_netcdf(ds, sm.output[0], config=resolved_config(sm.config), version=sm.params.version)
