"""Random aliasing of kernel parameters and random writes between a forward launch and its
reverse (issue 18): each gradient is either exactly what the forward that ran implies, or an
error; never anything else.

The kernel reads `a` and `b` (floats) and `n` (loop bounds) and accumulates into `y`. Hypothesis
chooses which parameters share one array or one piece of NumPy memory through separate
wrappers, whether the reverse runs through `kernel.grad` or a `qd.ad.Tape`, and which write
(if any) happens between the forward and the reverse: through the array passed, through
another wrapper of its memory, or through a plain NumPy array passed inside a tape.

Oracle: the complex-step derivative (exact to rounding) of a float64 NumPy model of the
forward, evaluated at the values the forward read."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import qdarray as qd

N = 4


@qd.kernel
def mix(a: qd.Array[qd.float64, 1], b: qd.Array[qd.float64, 1], n: qd.Array[qd.int32, 1],
        y: qd.Array[qd.float64, 1]):
    for i in range(a.shape[0]):
        v = a[i]
        for _ in range(n[i]):
            v = v * b[i] + 0.125
        y[i] += v * a[i]


def _model(a: np.ndarray, b: np.ndarray, n: np.ndarray) -> np.ndarray:
    out = np.zeros(N, dtype=a.dtype)
    for i in range(N):
        v = a[i]
        for _ in range(int(n[i])):
            v = v * b[i] + 0.125
        out[i] = v * a[i]
    return out


def _reference(w0: np.ndarray, b0: np.ndarray, n0: np.ndarray, b_is_w: bool) -> np.ndarray:
    """d sum(y) / dw by complex steps, where a is w and b is w too when `b_is_w`."""
    h = 1e-30
    grad = np.zeros(N)
    for k in range(N):
        w = w0.astype(complex)
        w[k] += 1j * h
        grad[k] = _model(w, w if b_is_w else b0.astype(complex), n0).sum().imag / h
    return grad


@st.composite
def scenarios(draw):
    return {
        "how": draw(st.sampled_from(["kernel.grad", "Tape"])),
        # b: its own array, the same Array as a, or another wrapper of a's NumPy memory
        "b": draw(st.sampled_from(["own", "same array", "other wrapper", "numpy"])),
        "n": draw(st.sampled_from(["array", "numpy"])),
        # the write between forward and reverse: what is written, and through what
        "write": draw(st.sampled_from(["none", "a", "b", "n"])),
        "through": draw(st.sampled_from(["passed", "other wrapper"])),
        "a0": draw(st.lists(st.floats(0.1, 0.9), min_size=N, max_size=N)),
        "n0": draw(st.lists(st.integers(0, 4), min_size=N, max_size=N)),
        "new": draw(st.floats(0.1, 0.9)),
    }


@settings(max_examples=60, derandomize=True, deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(scenarios())
def test_a_gradient_is_exact_or_an_error(s):
    if s["how"] == "kernel.grad" and "numpy" in (s["b"], s["n"]) and s["write"] != "none":
        # Plain NumPy arrays count no writes; outside a tape nothing keeps what they held
        # (docs/guarantees.md): only the tape's copies can see such a write.
        s = {**s, "b": "own" if s["b"] == "numpy" else s["b"], "n": "array"}
    memory = np.array(s["a0"])
    w = qd.asarray(memory, requires_grad=True)
    b_memory = np.linspace(0.2, 0.8, N)
    b = {"own": qd.asarray(b_memory), "same array": w, "other wrapper": qd.asarray(memory),
         "numpy": b_memory}[s["b"]]
    n_memory = np.array(s["n0"], np.int32)
    n = qd.asarray(n_memory) if s["n"] == "array" else n_memory
    y = qd.zeros(N, dtype=qd.float64, requires_grad=True)
    b_is_w = s["b"] in ("same array", "other wrapper")
    expected = _reference(memory.copy(), np.asarray(b).copy(), n_memory.copy(), b_is_w)

    def write() -> bool:
        target = s["write"]
        if target == "none":
            return False
        passed = {"a": w, "b": b, "n": n}[target]
        raw = {"a": memory, "b": memory if b_is_w else b_memory, "n": n_memory}[target]
        if type(passed) is np.ndarray:
            through = passed  # a plain NumPy argument is written as itself
        elif s["through"] == "passed":
            through = passed
        else:
            through = qd.asarray(raw)  # another wrapper of the same memory
        through[1] = s["new"] if target != "n" else 3
        return True

    def forward_then_reverse() -> bool:
        if s["how"] == "Tape":
            with qd.ad.Tape() as tape:
                mix(w, b, n, y)
                loss = qd.sum(y)
                wrote = write()
            tape.backward(loss)
            return wrote
        mix(w, b, n, y)
        wrote = write()
        y.grad[...] = 1.0
        mix.grad(w, b, n, y)
        return wrote

    if s["b"] == "other wrapper":  # b has no gradient of its own: refused, never dropped
        with pytest.raises((qd.AutodiffError, qd.AdStackSizingError)) as refused:
            forward_then_reverse()
        if s["write"] == "none":  # (else the write may be what is reported first)
            assert "separate wrapper of the same memory" in str(refused.value)
        return
    try:
        forward_then_reverse()
    except (qd.AutodiffError, qd.AdStackSizingError) as error:
        assert s["write"] != "none", f"an error without a write: {error}"
        return
    got = np.asarray(w.grad)
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15,
                               err_msg=f"a wrong gradient, silently: {s}")


def test_the_oracle_matches_finite_differences():
    rng = np.random.default_rng(3)
    w0, b0, n0 = rng.uniform(0.1, 0.9, N), rng.uniform(0.1, 0.9, N), np.array([0, 1, 3, 4])
    for b_is_w in (False, True):
        g = _reference(w0, b0, n0, b_is_w)
        for k in range(N):
            e = np.zeros(N)
            e[k] = 1e-6
            hi = _model(w0 + e, (w0 + e) if b_is_w else b0, n0).sum()
            lo = _model(w0 - e, (w0 - e) if b_is_w else b0, n0).sum()
            assert abs((hi - lo) / 2e-6 - g[k]) < 1e-6
    with pytest.raises(AssertionError):
        np.testing.assert_allclose(_reference(w0, b0, n0, True), _reference(w0, b0, n0, False))
