"""The attention models beyond the paper's (aimlib.model.generate with prior= and attention=,
docs/theory.md §15): untied self-attention and cross-attention with either prior. Their indices
have the covariances the theory assumes (checked on the tokens against the teacher's exact
moments), their labels are the channel over the keys of each row, the draws are reproducible
and the paper's model is untouched; the algorithms that need the paper's model (the spectral
estimator; AMP on untied self-attention) refuse the others with the key named."""

import math

import numpy as np
import pytest

from aimlib import model
from aimlib.algorithms import amp, spectral
from aimlib.model import generate


def _stats(h):
    """Per-entry variance of the indices over samples, and the largest correlation between two
    different entries of a sample, with its standard error."""
    m = h.shape[0]
    flat = h.reshape(m, -1)
    cov = flat.T @ flat / m
    var = np.diag(cov)
    corr = cov / np.sqrt(np.outer(var, var))
    off = corr[~np.eye(corr.shape[0], dtype=bool)]
    return var, np.max(np.abs(off)), 1.0 / math.sqrt(m)


@pytest.mark.parametrize("prior", ["untied", "tied"])
def test_cross_attention_indices_are_independent_with_variance_q0(prior):
    """h_ab = x_a^T S z_b / sqrt(d): given S, every index has variance ||S||^2 / d and the
    T_q T_k indices of a sample are uncorrelated (within five standard errors over samples)."""
    data = generate("softmax", 0.3, 0.5, 3, 60, 0, prior=prior, attention="cross", T_q=2)
    X = data.tokens()
    assert X.shape == (data.n, 5, 60)
    h = data.indices(X, data.S)
    assert h.shape == (data.n, 2, 3)
    var, worst, se = _stats(h)
    expected = float(np.sum(data.S * data.S)) / data.d
    assert np.all(np.abs(var - expected) <= 5 * expected * math.sqrt(2) * se)
    assert worst <= 5 * se
    # the labels are the softmax over the keys of each query row, of those indices
    np.testing.assert_array_equal(data.labels, data.ch.row_labels(h, None))
    np.testing.assert_allclose(data.labels.sum(axis=-1), 1.0, rtol=1e-12)


def test_untied_self_attention_indices():
    """h_ab = (x_a^T S x_b - delta_ab Tr S) / sqrt(d) with S not symmetric: Var h_aa =
    (||S||^2 + Tr S^2) / d, Var h_ab = ||S||^2 / d, and h_ab, h_ba correlate by Tr S^2 / ||S||^2
    (near 0 for K Q^T): the two orders of a pair are two measurements."""
    data = generate("hardmax", 0.3, 0.5, 3, 60, 1, prior="untied")
    h = data.indices(data.tokens(), data.S)
    var, _, se = _stats(h)
    var = var.reshape(3, 3)
    S = data.S
    norm, tr2 = float(np.sum(S * S)) / 60, float(np.trace(S @ S)) / 60
    for a in range(3):
        for b in range(3):
            want = norm + tr2 if a == b else norm
            assert abs(var[a, b] - want) <= 5 * want * math.sqrt(2) * se, (a, b)
    c = np.mean(h[:, 0, 1] * h[:, 1, 0]) / math.sqrt(var[0, 1] * var[1, 0])
    assert c == pytest.approx(tr2 / norm, abs=5 * se)
    np.testing.assert_array_equal(data.labels, np.argmax(h, axis=-1))
    assert data.outputs().shape == (data.n, 3, 3)


def test_gaussian_labels_are_noisy_per_entry_in_cross_attention():
    """y = h + sqrt(Delta) z with one z per (query, key): the residual has variance Delta in
    every entry, and the draw is reproducible."""
    data = generate("gaussian", 0.4, 0.5, 2, 40, 0, attention="cross", prior="untied", delta=0.3)
    r = data.labels - data.indices(data.tokens(), data.S)
    v = r.reshape(data.n, -1).var(axis=0)
    assert np.all(np.abs(v - 0.3) <= 5 * 0.3 * math.sqrt(2 / data.n))
    again = generate("gaussian", 0.4, 0.5, 2, 40, 0, attention="cross", prior="untied",
                     delta=0.3)
    np.testing.assert_array_equal(again.labels, data.labels)


def test_models_draw_from_their_own_keys_and_the_paper_model_is_unchanged():
    """Explicit defaults give the paper's data bit for bit; cross-attention and the untied prior
    draw other teachers and tokens."""
    base = generate("softmax", 0.2, 0.5, 2, 30, 0)
    same = generate("softmax", 0.2, 0.5, 2, 30, 0, prior="tied", attention="self")
    np.testing.assert_array_equal(base.labels, same.labels)
    np.testing.assert_array_equal(base.W, same.W)
    cross = generate("softmax", 0.2, 0.5, 2, 30, 0, attention="cross")
    assert not np.array_equal(cross.W, base.W)
    assert cross.tokens(0, 5).shape == (5, 4, 30) and base.tokens(0, 5).shape == (5, 2, 30)


def test_bad_input_names_the_key():
    with pytest.raises(ValueError, match="attention"):
        generate("softmax", 0.2, 0.5, 2, 30, 0, attention="causal")
    with pytest.raises(ValueError, match="T=1"):
        generate("gaussian", 0.2, 0.5, 1, 30, 0, prior="untied", delta=0.1)
    with pytest.raises(ValueError, match="T_q"):
        generate("softmax", 0.2, 0.5, 2, 30, 0, attention="cross", T_q=0)
    with pytest.raises(ValueError, match="T_q"):
        generate("softmax", 0.2, 0.5, 2, 30, 0, T_q=3)
    with pytest.raises(ValueError, match="rho"):
        generate("softmax", 0.2, 0.0, 2, 30, 0, attention="cross")
    cross = generate("softmax", 0.2, 0.5, 2, 20, 0, attention="cross")
    untied = generate("softmax", 0.2, 0.5, 2, 20, 0, prior="untied")
    # the spectral estimator runs in cross-attention (tests/test_cells.py), not with backends
    # other than numpy there
    assert spectral.run(cross).converged
    for run in (amp.run, spectral.run):
        with pytest.raises(ValueError, match="prior='untied'"):
            run(untied)
    assert model.ATTENTIONS == ("self", "cross")
