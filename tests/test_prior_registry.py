"""The prior registry (aimlib.prior.PRIORS): every registered prior passes the library's
identities (aimlib.prior.verification), and a new prior -- a Gaussian (GOE) teacher, registered
with one line -- runs through state evolution, AMP and the command line, where its closed forms
are known: mmse = Delta / (1 + Delta), and for the softmax channel the error 1 - alpha_bar."""

import math
from typing import ClassVar

import numpy as np
import pytest

from aimlib import cli, model, prior
from aimlib import state_evolution as se
from aimlib.algorithms import amp, gd
from aimlib.prior import PRIORS, Prior, make_prior
from aimlib.prior.verification import check_prior


class GOE(Prior):
    """``S*`` a GOE matrix (off-diagonal variance 1/d): ``Q0 = 1``, mean 0, semicircle of
    variance ``1 + Delta`` in noise, linear shrinkage ``l / (1 + Delta)``."""

    name: ClassVar[str] = "goe"
    label: ClassVar[str] = "a GOE teacher"

    @property
    def second_moment(self):
        return 1.0

    @property
    def mean_overlap(self):
        return 0.0

    def mean(self, d):
        return np.zeros((d, d))

    def mmse(self, delta):
        delta = np.asarray(delta, dtype=float)
        out = np.where(np.isinf(delta), 1.0, delta / (1.0 + np.where(np.isinf(delta), 0, delta)))
        return float(out) if out.ndim == 0 else out

    def mmse_slope(self):
        return 1.0

    def support(self, delta):
        r = 2.0 * math.sqrt(1.0 + delta)
        return np.array([[-r, r]])

    def stieltjes(self, x, delta):
        s2 = 1.0 + delta
        z = np.asarray(x, dtype=complex) - 1e-300j
        return (z - np.sqrt(z - 2 * math.sqrt(s2)) * np.sqrt(z + 2 * math.sqrt(s2))) / (2 * s2)

    def shrink(self, eigs, delta):
        return np.asarray(eigs, dtype=float) / (1.0 + delta)

    def sample(self, d, rng):
        A = rng.standard_normal((d, d))
        return (A + A.T) / math.sqrt(2.0 * d)

    def matrix(self, factor):
        return factor


@pytest.fixture
def goe(monkeypatch):
    monkeypatch.setitem(PRIORS, "goe", GOE)  # the one line a new prior needs
    return make_prior("goe", 1.0)


@pytest.mark.parametrize("name", list(PRIORS))
def test_every_registered_prior_passes_the_identities(name):
    """At one noise level here (tests/test_prior.py checks the tied prior's numerics across
    rho and Delta against independent references)."""
    for c in check_prior(make_prior(name, 0.5), deltas=(0.5,)):
        assert c.ok, c


def test_the_test_prior_passes_them_and_a_wrong_one_fails(goe):
    check_prior(goe)

    class Wrong(GOE):
        def mmse(self, delta):
            return 1.1 * super().mmse(delta)

    with pytest.raises(AssertionError, match="mmse = Delta"):
        check_prior(Wrong(1.0))


def test_names_and_bad_input(goe):
    assert prior.mmse(0.5, 1.0, prior="goe") == pytest.approx(1 / 3, rel=1e-15)
    assert prior.mmse(0.5, 0.5) == prior.wishart.mmse(0.5, 0.5)  # the tied prior by default
    assert make_prior(goe) is goe
    with pytest.raises(ValueError,
                       match="prior must be one of 'tied', 'untied', 'goe', got prior='wide'"):
        make_prior("wide", 0.5)
    data = model.generate("softmax", 0.1, 1.0, 2, 30, 0, prior="goe")
    with pytest.raises(ValueError, match="prior: GD fits a factor"):
        gd.run(data, inits=1, steps=2)
    with pytest.raises(ValueError, match="rademacher tokens are not implemented for the goe"):
        model.generate("softmax", 0.1, 1.0, 2, 30, 0, prior="goe", tokens="rademacher")
    with pytest.raises(ValueError, match="rademacher tokens are not implemented for the goe"):
        se.solve("softmax", 0.1, 1.0, 2, prior="goe", tokens="rademacher")


@pytest.mark.parametrize("T", [2, 3])
def test_se_with_the_test_prior_is_its_closed_form(goe, T):
    """Softmax: q_hat = alpha_bar / V and V = mmse(1 / q_hat) = 1 / (1 + q_hat) give
    V = 1 - alpha_bar below the threshold alpha_bar = 1 (the prior's free fraction)."""
    K = T * T + T - 2
    for abar in (0.2, 0.5, 0.8):
        res = se.solve("softmax", abar / K, 1.0, T, prior="goe")
        assert res.error == pytest.approx(1.0 - abar, abs=1e-8)
        assert res.error_informed == pytest.approx(1.0 - abar, abs=1e-8)
    assert se.perfect_recovery_threshold("softmax", 1.0, T, prior="goe") == pytest.approx(1 / K)
    assert se.solve("softmax", 1.2 / K, 1.0, T, prior="goe").error < 1e-8
    ds = se.curve("softmax", [0.3 / K, 0.6 / K], 1.0, T, prior="goe")
    assert ds.attrs["prior"] == "goe" and ds.attrs["Q0"] == 1.0
    np.testing.assert_allclose(ds["error"].values, [0.7, 0.4], atol=1e-8)
    assert "prior" not in se.curve("softmax", [0.1], 0.5, T).attrs  # tied caches unchanged


def test_amp_with_the_test_prior_reaches_its_se(goe):
    """Softmax, T = 2, alpha_bar = 0.5, d = 80, 3 seeds: AMP (its denoiser the prior's linear
    shrinkage, its start the prior's mean 0) converges to SE's 1 - alpha_bar = 0.5 within
    three standard errors plus the finite-size margin 0.02."""
    errs = []
    for seed in range(3):
        data = model.generate("softmax", 0.5 / 4, 1.0, 2, 80, seed, prior="goe")
        res = amp.run(data)
        assert res.converged, res.stop_reason
        errs.append(res.error)
    errs = np.array(errs)
    assert abs(errs.mean() - 0.5) < 3 * errs.std(ddof=1) / math.sqrt(3) + 0.02, errs


def test_the_command_line_takes_the_prior(goe, capsys):
    assert cli.main(["mmse", "--prior", "goe", "--rho", "1", "--delta", "0.5",
                     "--format", "csv"]) == 0
    row = capsys.readouterr().out.splitlines()[1].split(",")
    assert float(row[2]) == pytest.approx(1 / 3) and float(row[3]) == 1.0
    assert cli.main(["se", "softmax", "--prior", "goe", "--rho", "1", "--alpha-bar", "0.5",
                     "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    head = out[0].split(",")
    assert float(out[1].split(",")[head.index("error")]) == pytest.approx(0.5, abs=1e-8)
    assert cli.main(["amp", "softmax", "--prior", "goe", "--rho", "1", "--alpha-bar", "0.5",
                     "--d", "60", "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    head, row = out[0].split(","), out[1].split(",")
    assert float(row[head.index("SE")]) == pytest.approx(0.5, abs=1e-8)
    assert abs(float(row[head.index("error")]) - 0.5) < 0.08
