"""The theory: the Bayes-optimal state evolution (``state_evolution``, with the hardmax
small-width limit in ``small_width``), the state evolution of AMP with a non-Bayes output
function (``mismatched``), how the error vanishes (``asymptotics``) and the test error on fresh
samples (``generalisation``) (docs/theory.md §3, §8-§10)."""
