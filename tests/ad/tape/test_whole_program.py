"""Reverse mode over whole programs: namespace operations recorded on the tape beside kernels.

Every operation's VJP rule is checked against `jax.grad` of the same NumPy-style program and
against central finite differences (tests/ad/wholeprog.py). The same tests run on the OpenCL
and simulated CUDA devices (tests/device_suites.py: WHOLE_PROGRAM).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
import wholeprog
from wholeprog import SPECS, Spec, check

import qdarray as qd
from qdarray._autodiff import VJPS

jax = pytest.importorskip("jax", reason="JAX is a test extra: the oracle for the VJP rules")
jnp = pytest.importorskip("jax.numpy", reason="JAX is a test extra")
jax.config.update("jax_enable_x64", True)


@pytest.fixture
def device() -> str:
    """The CPU here; the device directories bring their own."""
    return "cpu"


def host(x: qd.Array) -> np.ndarray:
    return np.asarray(x.to_device("cpu"))


@pytest.mark.parametrize("spec", SPECS, ids=[s.name for s in SPECS])
def test_vjp_against_jax_and_finite_differences(spec: Spec, device: str) -> None:
    check(spec, device)


def test_every_rule_is_exercised() -> None:
    """The table above reaches every VJP rule but those tested on their own below."""
    seen: set[str] = set()
    for spec in SPECS:
        inputs = spec.gen(np.random.default_rng(0))
        args = [qd.asarray(a, requires_grad=True) for a in inputs]
        with qd.ad.Tape() as tape:
            wholeprog.program(spec, "cpu")(*args)
            seen.update(r.rule.name for r in tape.records if hasattr(r, "rule"))
    # add_at and the transpose: nested; nextafter: JAX has no rule to check it against;
    # jit.fused (a fused run of qd.jit, registered once qd.jit fuses): tests/jit
    own_tests = {"asarray", "to_device", "add_at", "view's transpose", "nextafter", "jit.fused"}
    rules = {name for name, rule in VJPS.items() if not rule.zero}
    assert rules - own_tests - seen == set()


# -- every namespace function records, is a constant, or refuses ---------------------------------

x_ = np.linspace(0.1, 0.9, 12).reshape(3, 4)

# How each public function is called on a tracked float64 array `x` (3 x 4).
CALLS = {
    "take": lambda x: qd.take(x, qd.asarray([0, 2]), axis=1),
    "take_along_axis": lambda x: qd.take_along_axis(x, qd.argsort(x, axis=1), axis=1),
    "matmul": lambda x: qd.matmul(x, x.T), "matrix_transpose": qd.matrix_transpose,
    "tensordot": lambda x: qd.tensordot(x, x, axes=2), "vecdot": lambda x: qd.vecdot(x, x),
    "broadcast_arrays": lambda x: qd.broadcast_arrays(x, x[0])[1],
    "broadcast_to": lambda x: qd.broadcast_to(x, (2, 3, 4)),
    "concat": lambda x: qd.concat([x, x]), "expand_dims": qd.expand_dims, "flip": qd.flip,
    "moveaxis": lambda x: qd.moveaxis(x, 0, 1), "permute_dims": lambda x: qd.permute_dims(
        x, (1, 0)), "repeat": lambda x: qd.repeat(x, 2), "reshape": lambda x: qd.reshape(
            x, (12,)), "roll": lambda x: qd.roll(x, 1), "squeeze": lambda x: qd.squeeze(
                x[None], axis=0), "stack": lambda x: qd.stack([x, x]), "tile": lambda x: qd.tile(
                    x, (2,)), "unstack": lambda x: qd.unstack(x)[0],
    "where": lambda x: qd.where(x > 0.5, x, 0.0), "sort": qd.sort,
    "unique_all": lambda x: qd.unique_all(x).values, "unique_counts": lambda x: qd.unique_counts(
        x).values, "unique_inverse": lambda x: qd.unique_inverse(x).values,
    "unique_values": qd.unique_values, "clip": lambda x: qd.clip(x, 0.2, 0.8),
    "astype": lambda x: qd.astype(x, qd.float32), "cumulative_prod": lambda x: (
        qd.cumulative_prod(x, axis=0)), "cumulative_sum": lambda x: qd.cumulative_sum(x, axis=0),
    "diag": lambda x: qd.diag(x[0]),
    "diff": qd.diff, "tril": qd.tril, "triu": qd.triu, "asarray": lambda x: qd.asarray(
        x, copy=True), "from_dlpack": lambda x: qd.from_dlpack(x, copy=True),
    "meshgrid": lambda x: qd.meshgrid(x[0], x[1])[0],
    "linalg.cholesky": lambda x: qd.linalg.cholesky(x @ x.T + qd.eye(3)),
    "linalg.cross": lambda x: qd.linalg.cross(x[:, :3], x[:, 1:]),
    "linalg.det": lambda x: qd.linalg.det(x[:, :3]), "linalg.diagonal": qd.linalg.diagonal,
    "linalg.eig": lambda x: qd.linalg.eig(x[:, :3]).eigenvalues,
    "linalg.eigh": lambda x: qd.linalg.eigh(x[:, :3]).eigenvalues,
    "linalg.eigvals": lambda x: qd.linalg.eigvals(x[:, :3]),
    "linalg.eigvalsh": lambda x: qd.linalg.eigvalsh(x[:, :3]),
    "linalg.inv": lambda x: qd.linalg.inv(x[:, :3] + qd.eye(3)),
    "linalg.matrix_norm": qd.linalg.matrix_norm,
    "linalg.matrix_power": lambda x: qd.linalg.matrix_power(x[:, :3], 2),
    "linalg.outer": lambda x: qd.linalg.outer(x[0], x[1]),
    "linalg.pinv": qd.linalg.pinv, "linalg.qr": lambda x: qd.linalg.qr(x.T).R,
    "linalg.slogdet": lambda x: qd.linalg.slogdet(x[:, :3] + qd.eye(3)).logabsdet,
    "linalg.solve": lambda x: qd.linalg.solve(x[:, :3] + qd.eye(3), x),
    "linalg.svd": lambda x: qd.linalg.svd(x, full_matrices=False).S,
    "linalg.svdvals": qd.linalg.svdvals,
    "linalg.trace": qd.linalg.trace, "linalg.vector_norm": qd.linalg.vector_norm,
    "fft.fft": qd.fft.fft, "fft.ifft": qd.fft.ifft, "fft.fftn": qd.fft.fftn,
    "fft.ifftn": qd.fft.ifftn, "fft.rfft": qd.fft.rfft, "fft.irfft": qd.fft.irfft,
    "fft.rfftn": qd.fft.rfftn, "fft.irfftn": qd.fft.irfftn, "fft.hfft": qd.fft.hfft,
    "fft.ihfft": qd.fft.ihfft, "fft.fftshift": qd.fft.fftshift,
    "fft.ifftshift": qd.fft.ifftshift,
}
for _name in ("max", "mean", "min", "prod", "std", "sum", "var", "real", "imag", "conj"):
    CALLS[_name] = getattr(qd, _name)
# Functions whose results carry no gradient: integer or boolean results, creation from
# shapes or values, constants of another array's shape, dtype queries, kernels.
CONSTANT = {
    "empty", "empty_like", "full", "full_like", "ones", "ones_like", "zeros", "zeros_like",
    "arange", "eye", "linspace", "__array_namespace_info__", "broadcast_shapes", "argmax",
    "argmin", "count_nonzero", "nonzero", "searchsorted", "argsort", "isin", "all", "any",
    "can_cast", "finfo", "iinfo", "isdtype", "result_type", "atomic_add", "atomic_max",
    "atomic_min", "cast", "debug_mode", "func", "kernel", "jit", "select", "set_debug", "static",
    "linalg.matrix_rank", "fft.fftfreq", "fft.rfftfreq", "signbit", "isfinite", "isinf",
    "default_device", "get_default_device", "set_default_device", "default_float",
    "set_default_float", "vec2", "vec3", "vec4", "mat2", "mat3", "mat4", "vec2d", "vec3d",
    "vec4d", "mat2d", "mat3d", "mat4d",
    "isnan", "equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
    "logical_and", "logical_or", "logical_xor", "logical_not", "bitwise_and", "bitwise_or",
    "bitwise_xor", "bitwise_invert", "bitwise_left_shift", "bitwise_right_shift",
}
# Elementwise functions: the whole table above checks their rules; here, that they record.
ELEMENTWISE_UNARY = {"abs", "acos", "acosh", "asin", "asinh", "atan", "atanh", "ceil", "cos",
                     "cosh", "exp", "expm1", "floor", "log", "log10", "log1p", "log2",
                     "negative", "positive", "reciprocal", "round", "sign", "sin", "sinh",
                     "sqrt", "square", "tan", "tanh", "trunc"}
ELEMENTWISE_BINARY = {"add", "atan2", "copysign", "divide", "floor_divide", "hypot",
                      "logaddexp", "maximum", "minimum", "multiply", "nextafter", "pow",
                      "remainder", "subtract"}
PIECEWISE_CONSTANT = {"ceil", "floor", "round", "sign", "trunc", "floor_divide"}
NO_RULE = {"unique_all", "unique_counts", "unique_inverse", "unique_values", "linalg.eig",
           "linalg.eigvals"}


def _public() -> set[str]:
    names = {n for n in qd.__all__ if callable(getattr(qd, n)) and not isinstance(
        getattr(qd, n), type)}
    names |= {f"linalg.{n}" for n in qd.linalg.__all__ if not isinstance(
        getattr(qd.linalg, n), type) and n not in ("matmul", "matrix_transpose", "tensordot",
                                                    "vecdot")}
    names |= {f"fft.{n}" for n in qd.fft.__all__}
    return names


def test_every_public_function_is_classified() -> None:
    classified = set(CALLS) | CONSTANT | ELEMENTWISE_UNARY | ELEMENTWISE_BINARY
    assert _public() - classified == set()
    assert classified - _public() == set()


@pytest.mark.parametrize("name", sorted(set(CALLS) | ELEMENTWISE_UNARY | ELEMENTWISE_BINARY))
def test_function_records_is_constant_or_refuses(name: str) -> None:
    if name in ELEMENTWISE_UNARY:
        call = getattr(qd, name)
    elif name in ELEMENTWISE_BINARY:
        def call(x: qd.Array) -> qd.Array:
            return getattr(qd, name)(x, x[0] + 1.0)
    else:
        call = CALLS[name]
    x = qd.asarray(x_ + (1.0 if name == "acosh" else 0.0), requires_grad=True)
    with qd.ad.Tape() as tape:
        if name in NO_RULE:
            with pytest.raises(qd.AutodiffError, match=f"{name} has no gradient rule"):
                call(x)
            return
        out = call(x)
        if name in PIECEWISE_CONSTANT:
            assert not out.requires_grad and not tape.tracked(out)
        else:
            assert tape.tracked(out) and out.requires_grad
    assert out.requires_grad == (out.grad is not None)     # after the block: companions only


@pytest.mark.parametrize("name, call", [
    ("linalg.qr of a wide matrix", lambda x: qd.linalg.qr(x)),
    ("linalg.qr\\(mode='complete'\\) of a tall matrix", lambda x: qd.linalg.qr(
        x.T, mode="complete")),
    ("linalg.svd\\(full_matrices=True\\) of a non-square matrix", lambda x: qd.linalg.svd(x)),
    ("linalg.eigh of a complex matrix", lambda x: qd.linalg.eigh(
        qd.astype(x[:, :3], qd.complex128))),
])
def test_decompositions_whose_derivative_is_not_unique_refuse(name, call) -> None:
    """As in JAX: the extra columns of a complete Q or of full singular vectors are not
    unique, so their derivative is not defined; complex decompositions have no rule."""
    x = qd.asarray(x_, requires_grad=True)
    with qd.ad.Tape(), pytest.raises(qd.AutodiffError, match=f"{name}.* has no gradient rule"):
        call(x)


def test_no_rule_outside_a_tape_or_without_gradients_is_fine() -> None:
    x = qd.asarray(x_, requires_grad=True)
    assert qd.linalg.qr(x).R.shape == (3, 4)          # no tape
    with qd.ad.Tape():
        qd.linalg.qr(qd.asarray(x_))                  # no gradient to lose
        qd.linalg.qr(qd.ad.stop_gradient(x))          # explicitly a constant


# -- ties, as JAX splits them -------------------------------------------------------------------


def _both(f, *inputs):
    got = qd.ad.grad(lambda *a: f(qd, *a), argnums=tuple(range(len(inputs))))(
        *[qd.asarray(np.asarray(a, dtype=np.float64)) for a in inputs])
    want = jax.grad(lambda *a: f(jnp, *a), argnums=tuple(range(len(inputs))))(
        *[jnp.asarray(np.asarray(a, dtype=np.float64)) for a in inputs])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_array_equal(host(g), np.asarray(w))


def test_ties_split_as_jax_does() -> None:
    a = [1.0, 3.0, 3.0, 2.0]
    b = [3.0, 1.0, 3.0, 2.0]
    _both(lambda xp, x: xp.max(x) * 2.0 + xp.min(x, axis=0), a)
    _both(lambda xp, x, y: xp.sum(xp.maximum(x, y) * xp.asarray([1.0, 2.0, 3.0, 4.0])
                                  + xp.minimum(x, y)), a, b)
    _both(lambda xp, x: xp.sum(xp.clip(x, 2.0, 3.0) * xp.asarray([1.0, 2.0, 3.0, 4.0])), a)
    _both(lambda xp, x: xp.sum(xp.sort(x) * xp.asarray([1.0, 2.0, 3.0, 4.0])), a)
    _both(lambda xp, x: xp.linalg.vector_norm(x, ord=float("inf")), a)
    _both(lambda xp, x: xp.sum(xp.maximum(x, 2.0)), [1.0, 2.0, 3.0])


def test_a_nan_extremum_gives_its_nan_inputs_nan(device: str) -> None:
    """max / min of a slice holding NaN is NaN: its NaN inputs get a NaN gradient (it was all
    zeros, silently), the others 0 (JAX's 0 / 0 makes the whole slice NaN)."""
    a = np.array([[1.0, np.nan, 2.0], [1.0, 3.0, 2.0], [np.nan, 0.5, np.nan]])
    w = np.array([1.0, 2.0, 3.0])
    for name in ("max", "min"):
        def program(x, name=name):
            return qd.sum(getattr(qd, name)(x, axis=1) * qd.asarray(w, device=device))

        got = host(qd.ad.grad(program)(qd.asarray(a, device=device)))
        want = np.zeros_like(a)
        want[np.isnan(a)] = np.nan
        want[1, 1 if name == "max" else 0] = 2.0
        np.testing.assert_array_equal(got, want)
        jgrad = np.asarray(jax.grad(lambda x, name=name: jnp.sum(
            getattr(jnp, name)(x, axis=1) * jnp.asarray(w)))(jnp.asarray(a)))
        assert np.all(np.isnan(jgrad[np.isnan(a)])) and np.array_equal(jgrad[1], want[1])
        one = qd.ad.grad(lambda x, name=name: getattr(qd, name)(x))(
            qd.asarray(a[0], device=device))
        np.testing.assert_array_equal(host(one), [0.0, np.nan, 0.0])


# -- types and promotion ------------------------------------------------------------------------


def test_gradients_keep_each_input_dtype() -> None:
    x32 = qd.asarray(np.array([0.5, 1.5], dtype=np.float32), requires_grad=True)
    w64 = qd.asarray(np.array([2.0, 3.0]), requires_grad=True)
    with qd.ad.Tape() as tape:
        loss = qd.sum(x32 * w64)                  # promoted to float64
    assert loss.dtype == qd.float64
    tape.backward(loss)
    assert x32.grad.dtype == qd.float32 and w64.grad.dtype == qd.float64
    np.testing.assert_array_equal(host(x32.grad), [2.0, 3.0])
    np.testing.assert_array_equal(host(w64.grad), [0.5, 1.5])


def test_integer_results_and_operands_are_constants() -> None:
    x = qd.asarray(np.array([0.5, 1.5, 2.5]), requires_grad=True)
    n = qd.asarray([1, 2, 3])
    with qd.ad.Tape() as tape:
        i = qd.astype(x, qd.int32)                # a cast to integers stops the gradient
        loss = qd.sum(x * n) + qd.sum(qd.astype(i, qd.float64) * x)
    assert not i.requires_grad
    tape.backward(loss)
    np.testing.assert_array_equal(host(x.grad), [1.0, 3.0, 5.0])


# -- in-place writes ----------------------------------------------------------------------------


def test_writes_the_tape_records_give_jax_gradients() -> None:
    x0 = np.array([0.3, -0.4, 0.9, 1.2])

    def qd_program(x: qd.Array) -> qd.Array:
        y = x * 3.0
        x[1] = 5.0                                # a leaf written: the old x[1] stops here
        v = x[0:2]                                # a view sharing x's gradient
        v *= y[2:4]                               # written through the view
        z = qd.exp(y) + 0.0
        z[qd.asarray([0, 3])] = x[2:4] ** 2       # an array computed on the tape
        z += x
        return qd.sum(x * y) + qd.sum(z * z)

    def jax_program(x):
        y = x * 3.0
        x = x.at[1].set(5.0)
        x = x.at[0:2].multiply(y[2:4])
        z = jnp.exp(y) + 0.0
        z = z.at[jnp.asarray([0, 3])].set(x[2:4] ** 2)
        z = z + x
        return jnp.sum(x * y) + jnp.sum(z * z)

    x = qd.asarray(x0.copy(), requires_grad=True)
    with qd.ad.Tape() as tape:
        loss = qd_program(x)
    tape.backward(loss)
    np.testing.assert_allclose(float(loss), float(jax_program(jnp.asarray(x0))), rtol=1e-12)
    np.testing.assert_allclose(host(x.grad), np.asarray(jax.grad(jax_program)(jnp.asarray(x0))),
                               rtol=1e-12)


def test_writing_what_the_tape_needs_is_undone_for_the_reverse() -> None:
    x0 = np.array([0.5, 1.0])
    x = qd.asarray(x0, requires_grad=True)
    w = qd.asarray(np.array([2.0, 3.0]))
    with qd.ad.Tape() as tape:
        loss = qd.sum(qd.sin(x) * w)              # keeps sin(x) for nothing, w for x
        w[0] = 7.0                                 # w changes under the tape: a copy is kept
    assert tape.stats()["snapshot_bytes"] == 8
    tape.backward(loss)
    np.testing.assert_allclose(host(x.grad), np.cos(x0) * [2.0, 3.0], rtol=1e-14)
    np.testing.assert_array_equal(host(w), [7.0, 3.0])

    x = qd.asarray(x0, requires_grad=True)
    with qd.ad.Tape() as tape:
        e = qd.exp(x)                              # keeps its result
        e *= 2.0                                   # an in-place operator on it
        loss = qd.sum(e)
    tape.backward(loss)
    np.testing.assert_allclose(host(x.grad), 2 * np.exp(x0), rtol=1e-14)
    np.testing.assert_allclose(host(e), 2 * np.exp(x0), rtol=1e-14)


def test_writes_the_tape_does_not_see_still_raise() -> None:
    x = qd.asarray(np.array([0.5, 1.0]), requires_grad=True)
    with qd.ad.Tape() as tape:
        s = qd.sin(x)
        loss = qd.sum(qd.cos(x) * s)
    np.asarray(x)[0] = 9.0                         # an export may be written
    with pytest.raises(qd.AutodiffError, match="a write the tape did not see"):
        tape.backward(loss)


@pytest.mark.parametrize("reads", [
    lambda w: np.median(w), lambda w: np.percentile(w, 30.0), lambda w: np.ptp(w),
    lambda w: np.add.outer(w, w), lambda w: np.nanargmax(w), lambda w: np.trapezoid(w)])
def test_numpy_functions_that_only_read_leave_kept_arrays_valid(reads) -> None:
    """A NumPy function qdarray does not map runs on the array's memory; NumPy's semantics
    say it only reads its inputs, so the tape's record of them still holds."""
    x = qd.asarray(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    w = qd.asarray(np.array([2.0, 3.0, 4.0]))
    with qd.ad.Tape() as tape:
        loss = qd.sum(x * w)                        # keeps w
        reads(w)
    tape.backward(loss)
    np.testing.assert_array_equal(host(x.grad), [2.0, 3.0, 4.0])


@pytest.mark.parametrize("name, writes", [
    ("numpy.copyto", lambda w: np.copyto(w, 1.0)),
    ("numpy.add.at", lambda w: np.add.at(w, [0], 1.0)),
    ("numpy.median", lambda w: np.median(w, overwrite_input=True)),
    ("numpy.put", lambda w: np.put(w, [0], [9.0])),
    ("numpy.putmask", lambda w: np.putmask(w, np.array([True, False, True]), 9.0)),
    ("numpy.nancumsum", lambda w: np.nancumsum(qd.asarray([1.0, 2.0, 3.0]), out=w)),
    ("numpy.ldexp", lambda w: np.ldexp(qd.asarray([1.0, 2.0, 3.0]), 2, w))])
def test_numpy_functions_that_write_invalidate_kept_arrays(name, writes) -> None:
    x = qd.asarray(np.array([0.5, 1.0, 2.0]), requires_grad=True)
    w = qd.asarray(np.array([2.0, 3.0, 4.0]))
    with qd.ad.Tape() as tape:
        loss = qd.sum(x * w)
        writes(w)
    with pytest.raises(qd.AutodiffError, match=f"written afterwards by {name}"):
        tape.backward(loss)


def test_a_view_written_behind_its_record_raises_on_use() -> None:
    x = qd.asarray(np.array([0.5, 1.0, 1.5]), requires_grad=True)
    with qd.ad.Tape():
        h = qd.exp(x) + 1.0
        b = qd.broadcast_to(h, (2, 3))             # a read-only view, recorded
        h[0] = 0.0                                  # changes b's elements too
        with pytest.raises(qd.AutodiffError, match="result of broadcast_to, whose memory was "
                                                   "written afterwards by x\\[key\\] = value"):
            qd.sum(b)


# -- the tape and the functional form ---------------------------------------------------------


def test_backward_errors() -> None:
    x = qd.asarray(np.array([0.5, 1.0]), requires_grad=True)
    with qd.ad.Tape() as tape:
        y = qd.sin(x)
        c = qd.sum(qd.asarray([1.0, 2.0]))
    with pytest.raises(qd.AutodiffError, match="does not depend on any array with a gradient"):
        tape.backward(c)
    with pytest.raises(ValueError, match="one element, or grad= of its shape"):
        tape.backward(y)
    tape.backward(y, grad=qd.asarray([1.0, 10.0]))
    np.testing.assert_allclose(host(x.grad), np.cos([0.5, 1.0]) * [1.0, 10.0])
    with pytest.raises(RuntimeError, match="already run"):
        tape.backward(y, grad=qd.asarray([1.0, 10.0]))


def test_backward_inside_the_block_and_nested_tapes() -> None:
    x = qd.asarray(np.array([0.5, 1.0]), requires_grad=True)
    with qd.ad.Tape() as outer:
        a = x * x
        with qd.ad.Tape() as inner:
            b = qd.sin(x)                          # recorded on the inner tape only
            inner.backward(qd.sum(b))
        loss = qd.sum(a)
    np.testing.assert_allclose(host(x.grad), np.cos([0.5, 1.0]))
    outer.backward(loss)
    np.testing.assert_allclose(host(x.grad), np.cos([0.5, 1.0]) + [1.0, 2.0])


def test_tapes_record_their_own_thread() -> None:
    x = qd.asarray(np.array([0.5, 1.0]), requires_grad=True)
    with qd.ad.Tape() as tape:
        worker = threading.Thread(target=lambda: qd.sin(x))
        worker.start()
        worker.join()
        qd.sum(x * 2.0)
    assert [r.rule.name for r in tape.records] == ["multiply", "sum"]


def test_grad_and_value_and_grad() -> None:
    def loss(w, x, scale):
        return qd.sum((x @ w - 1.0) ** 2) * scale

    w0 = np.array([0.5, -0.25])
    x0 = np.array([[1.0, 2.0], [3.0, 4.0], [0.5, 0.0]])
    w = qd.asarray(w0, requires_grad=True)
    value, g = qd.ad.value_and_grad(loss)(w, qd.asarray(x0), 2.0)
    want = jax.grad(lambda a: jnp.sum((jnp.asarray(x0) @ a - 1.0) ** 2) * 2.0)(jnp.asarray(w0))
    np.testing.assert_allclose(host(g), np.asarray(want), rtol=1e-13)
    assert float(value) == pytest.approx(float(np.sum((x0 @ w0 - 1.0) ** 2) * 2.0))
    assert host(w.grad).tolist() == [0.0, 0.0]        # the argument's own companion untouched
    gw, gx, gs = qd.ad.grad(loss, argnums=(0, 1, 2))(w0, x0, 2.0)
    assert gx.shape == (3, 2) and gs.shape == () and float(gs) == pytest.approx(float(value) / 2)
    (v, aux), g2 = qd.ad.value_and_grad(lambda w: (loss(w, qd.asarray(x0), 1.0), "aux"),
                                        has_aux=True)(w)
    assert aux == "aux" and host(g2) == pytest.approx(host(g) / 2)
    g3, aux = qd.ad.grad(lambda w: (qd.sum(w), 5), has_aux=True)(w)
    assert host(g3).tolist() == [1.0, 1.0] and aux == 5
    assert host(qd.ad.grad(lambda w: qd.sum(qd.asarray([1.0])))(w)).tolist() == [0.0, 0.0]


def test_functional_form_errors() -> None:
    with pytest.raises(TypeError, match="argument 0 has dtype int64"):
        qd.ad.grad(lambda n: qd.sum(n * 1.0))(qd.asarray([1, 2]))
    with pytest.raises(TypeError, match="one-element floating-point array; got shape \\(2,\\)"):
        qd.ad.grad(lambda x: x * 2.0)(qd.asarray([1.0, 2.0]))
    with pytest.raises(ValueError, match="argnums=3 names argument 3"):
        qd.ad.grad(lambda x: qd.sum(x), argnums=3)(qd.asarray([1.0]))


def test_functional_form_refuses_what_it_cannot_answer() -> None:
    x, y = qd.asarray([0.5, 1.0]), qd.asarray([2.0, 3.0])
    f = lambda a, b: qd.sum(a * a * b)  # noqa: E731
    # one argument named twice: the second stand-in would get every gradient, the first none
    for argnums in ((0, 0), (1, -1)):
        with pytest.raises(ValueError, match="names argument [01] twice"):
            qd.ad.grad(f, argnums=argnums)(x, y)
    # a complex result has no gradient in jax.grad's sense (it raises too), not Re's silently
    with pytest.raises(TypeError, match="one-element floating-point array; got shape \\(\\), "
                                        "dtype complex128"):
        qd.ad.grad(lambda a: qd.sum(a * 1j))(x)
    with pytest.raises(TypeError, match="has_aux=True\\) needs <lambda> to return a pair"):
        qd.ad.grad(lambda a: qd.sum(a), has_aux=True)(x)
    g, aux = qd.ad.grad(lambda a: [qd.sum(qd.real(a * (1 + 1j))), "aux"], has_aux=True)(x)
    assert host(g).tolist() == [1.0, 1.0] and aux == "aux"


def test_stop_gradient() -> None:
    x = qd.asarray(np.array([1.0, 2.0]), requires_grad=True)
    g = qd.ad.grad(lambda x: qd.sum(x * qd.ad.stop_gradient(x)))(x)
    assert host(g).tolist() == [1.0, 2.0]


def test_stats_report_operations_and_bytes_held() -> None:
    x = qd.asarray(np.ones(100), requires_grad=True)
    w = qd.asarray(np.ones(100))
    qd.ad.reset_stats()
    with qd.ad.Tape() as tape:
        a = x + w                                  # keeps nothing
        b = a * w                                  # keeps w (800 bytes) for a
        loss = qd.sum(qd.sin(b))                   # keeps b (800 bytes)
    assert tape.stats() == {"operations": 4, "kernel_launches": 0, "bytes_held": 1600,
                            "snapshot_bytes": 0}
    assert qd.ad.stats()["tape_operations"] == 4
    assert qd.ad.stats()["tape_bytes_held"] >= 1600
    tape.backward(loss)
    assert tape.stats() == {"operations": 4, "kernel_launches": 0, "bytes_held": 0,
                            "snapshot_bytes": 0}


def test_numpy_functions_are_recorded_or_refused() -> None:
    x0 = np.array([0.5, 1.0, 2.0])
    x = qd.asarray(x0, requires_grad=True)
    with qd.ad.Tape() as tape:
        y = np.sin(x) * 2.0                         # numpy.sin -> qd.sin: recorded
        z = np.sum(x ** 2) + x.mean()               # numpy.sum, the method: recorded
        with pytest.raises(qd.AutodiffError, match="numpy.median is not a qdarray operation"):
            np.median(x)
        np.median(qd.asarray(x0))                  # no gradient: NumPy may compute with it
        loss = qd.sum(y) + z
    tape.backward(loss)
    np.testing.assert_allclose(host(x.grad), 2 * np.cos(x0) + 2 * x0 + 1 / 3, rtol=1e-14)


def test_numpy_exports_of_arrays_with_gradients_are_refused_inside_a_tape() -> None:
    """np.asarray(x) hands NumPy code the values the tape cannot follow: the gradient through
    `qd.asarray(np.asarray(x)) * 2` (a wrapper of x's memory without x's gradient) was 0,
    silently, where finite differences give 2 (JAX and PyTorch refuse such exports too).
    Outside the tape, and for arrays without gradients or behind stop_gradient, it works."""
    x0 = np.array([0.5, 1.0, 2.0])
    x = qd.asarray(x0.copy(), requires_grad=True)
    with qd.ad.Tape():
        with pytest.raises(qd.AutodiffError, match=r"np.asarray\(x\) .* cut silently.*"
                                                    r"qd.ad.stop_gradient"):
            qd.asarray(np.asarray(x)) * 2.0
        with pytest.raises(qd.AutodiffError, match=r"np.asarray"):
            np.array(qd.sin(x))                     # a result computed from x, too
        np.testing.assert_array_equal(np.asarray(qd.ad.stop_gradient(x)), x0)
        np.testing.assert_array_equal(np.asarray(qd.asarray(x0)), x0)
    with pytest.raises(qd.AutodiffError, match=r"np.asarray"):
        qd.ad.grad(lambda v: qd.sum(qd.asarray(np.asarray(v)) * 2.0))(x)
    np.testing.assert_array_equal(np.asarray(x), x0)  # outside the tape


@pytest.mark.parametrize("export", [
    "float", "complex", "item", "item_k", "tolist", "tobytes", "np.float64", "fsum", "dlpack"])
def test_host_exports_of_arrays_with_gradients_are_refused_like_np_asarray(export: str) -> None:
    """float(x), x.item(), x.tolist(), np.float64(x) and math.fsum(x) inside a tape handed
    Python the values silently: `qd.asarray(float(y)) * x` gave x the gradient 0 for the
    value's own part. They raise the AutodiffError np.asarray(x) raises (one rule,
    _autodiff.refuse_export); outside the tape, behind stop_gradient, and for arrays without
    gradients they return the values."""
    import math

    run = {"float": float, "complex": complex, "item": lambda v: v.item(),
           "item_k": lambda v: v.item(0), "tolist": lambda v: v.tolist(),
           "tobytes": lambda v: v.tobytes(), "np.float64": np.float64,
           "fsum": lambda v: math.fsum(qd.reshape(v, (1,))),
           "dlpack": lambda v: np.from_dlpack(v).tolist()}[export]
    x = qd.asarray(np.array(2.0), requires_grad=True)
    with qd.ad.Tape():
        y = x * 3.0
        with pytest.raises(qd.AutodiffError, match=r"cut silently.*qd.ad.stop_gradient"):
            run(y)
        with pytest.raises(qd.AutodiffError, match=r"cut silently"):
            run(x)
        assert run(qd.ad.stop_gradient(y)) == run(qd.asarray(np.array(6.0)))
    with pytest.raises(qd.AutodiffError, match=r"cut silently"):
        qd.ad.grad(lambda v: qd.asarray(run(v * 1.0)) * v)(x)
    assert run(y) == run(qd.asarray(np.array(6.0)))              # after the tape


def test_from_dlpack_of_an_array_with_gradients_is_recorded() -> None:
    """qd.from_dlpack(y) of a result computed on the tape, to another device or copied: a
    recorded copy (it read y through y.__dlpack__, whose export counted as a write to y, and
    the tape then refused y as overwritten)."""
    x = qd.asarray(np.array([1.0, 2.0]), requires_grad=True)
    with qd.ad.Tape() as tape:
        y = qd.from_dlpack(x * 3.0, copy=True)
        z = qd.from_dlpack(x * 5.0)                       # the same memory: a view
        loss = qd.sum(y) + qd.sum(z)
    tape.backward(loss)
    np.testing.assert_array_equal(host(x.grad), [8.0, 8.0])


def test_host_exports_that_carry_no_gradient_work_inside_a_tape() -> None:
    """Printing, formatting, branching and integer conversions do not carry a derivative
    (text, or step functions of the value whose derivative is 0 where it exists): they work
    on arrays that need gradients, inside the tape."""
    x = qd.asarray(np.array(2.5), requires_grad=True)
    with qd.ad.Tape() as tape:
        y = x * 2.0
        assert f"{y:.2f}" == "5.00" and f"{y}" == "5.0" and "5." in repr(y) and str(y) == "5.0"
        assert bool(y > 1.0) and bool(y) and int(y) == 5
        loss = y * 1.0 if y > 1.0 else y * 0.0
    tape.backward(loss)
    assert float(x.grad) == 2.0


def test_results_that_share_their_input_memory_are_read_only_on_the_tape() -> None:
    x = qd.asarray(np.array([0.5, 1.0, 1.5]), requires_grad=True)
    z = qd.asarray(np.array([1.0 + 2.0j, 3.0 - 1.0j]))
    with qd.ad.Tape():
        b = qd.broadcast_to(qd.exp(x) + 0.0, (2, 3))
        v = b[0:1]                                  # a view of it: recorded, read-only too
        with pytest.raises(qd.AutodiffError, match="result of view .* shares its memory"):
            v[0, 0] = 1.0
        with pytest.raises(qd.AutodiffError, match="result of broadcast_to .* given to a kernel"):
            qd.BufferView(qd.broadcast_to(qd.exp(x) + 0.0, (3,)))
        r = qd.real(z * x[0])                       # a view of a complex array
        with pytest.raises(qd.AutodiffError, match="cannot be written through"):
            r[0] = 5.0
        assert float(qd.ad.stop_gradient(qd.sum(b))) > 0 and r.requires_grad  # reading them
    np.testing.assert_array_equal(np.asarray(z), [1.0 + 2.0j, 3.0 - 1.0j])


@qd.kernel
def _nextafter_kernel(x: qd.Array[qd.float64, 1], t: qd.Array[qd.float64, 1],
                      y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        y[i] = qd.math.nextafter(x[i], t[i]) * 3.0


def test_nextafter_has_the_same_gradient_in_the_namespace_and_in_kernels() -> None:
    """nextafter(x1, x2) is x1 moved by one ulp: d/dx1 is 1, d/dx2 is 0, in kernels and in the
    namespace alike (the namespace gave 0 for x1, as for a piecewise constant function; JAX
    and PyTorch define no rule)."""
    x0, t0 = np.array([0.5, -2.0, 3.0]), np.array([1.0, -5.0, 0.0])
    x, t = qd.asarray(x0, requires_grad=True), qd.asarray(t0, requires_grad=True)
    with qd.ad.Tape() as tape:
        loss = qd.sum(qd.nextafter(x, t) * 3.0)
    tape.backward(loss)
    xk, tk = qd.asarray(x0, requires_grad=True), qd.asarray(t0, requires_grad=True)
    y = qd.zeros(3, dtype=qd.float64, requires_grad=True)
    with qd.ad.Tape() as tape:
        _nextafter_kernel(xk, tk, y)
        loss = qd.sum(y)
    tape.backward(loss)
    np.testing.assert_array_equal(host(xk.grad), [3.0, 3.0, 3.0])
    np.testing.assert_array_equal(host(x.grad), host(xk.grad))
    np.testing.assert_array_equal(host(t.grad), [0.0, 0.0, 0.0])
    np.testing.assert_array_equal(host(tk.grad), [0.0, 0.0, 0.0])
