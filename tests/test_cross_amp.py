"""AMP on cross-attention (aimlib.algorithms.amp with CrossOps, docs/theory.md §15.3) reaches the
cross-attention state evolution (aimlib.theory.cross_attention), with either prior and the three
channels.

Tolerance: five standard errors of the seed mean plus 0.035 for the finite size: at d = 100 the
largest gap of one seed measured was 0.029 (hardmax, T = 2, untied, alpha = 0.4: 0.541 and 0.542
against 0.5125; three seeds average 0.5277 +- 0.024), at d = 200 it was 0.001 (0.5116); the
table at d = 100 and 200 is in benchmarks/README.md."""

import math

import numpy as np
import pytest

from aimlib.algorithms import amp
from aimlib.model import generate
from aimlib.theory import cross_attention as cross

CASES = [
    ("softmax", 2, "untied", 0.2, {}),
    ("hardmax", 3, "untied", 0.25, {}),
    ("hardmax", 2, "tied", 0.4, {}),
    ("gaussian", 2, "tied", 0.15, {"delta": 0.1}),
]


@pytest.mark.parametrize("channel, T, prior, alpha, params", CASES)
def test_amp_reaches_the_cross_attention_se(channel, T, prior, alpha, params):
    se = cross.solve(channel, alpha, 0.5, T_q=T, T_k=T, prior=prior, **params)
    errors = []
    for seed in range(2):
        data = generate(channel, alpha, 0.5, T, 100, seed, prior=prior, attention="cross",
                        **params)
        res = amp.run(data, max_iter=400)
        assert res.converged, res.stop_reason
        errors.append(res.error)
    sem = np.std(errors, ddof=1) / math.sqrt(len(errors))
    assert np.mean(errors) == pytest.approx(se.error, abs=5 * sem + 0.035), (errors, se.error)


def test_cross_amp_refuses_what_it_does_not_do():
    """The array-API backends and the general Onsager term are not there for cross-attention;
    untied self-attention has no AMP (no exact prior channel)."""
    data = generate("softmax", 0.2, 0.5, 2, 40, 0, attention="cross", prior="untied")
    with pytest.raises(ValueError, match="backend"):
        amp.run(data, backend="torch")
    with pytest.raises(ValueError, match="onsager"):
        amp.run(data, onsager="general")
    with pytest.raises(ValueError, match="prior='untied'"):
        amp.run(generate("softmax", 0.2, 0.5, 2, 40, 0, prior="untied"))
