"""qd.jit: tracing, the per-signature cache, static arguments, and what is refused."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd


def _f32(*values):
    return qd.asarray(np.asarray(values, dtype=np.float32))


def test_decorator_with_and_without_arguments():
    @qd.jit
    def f(x):
        return x * 2.0

    @qd.jit(static_argnums=1)
    def g(x, k):
        return x * k

    x = _f32(1.0, 2.0)
    assert np.array_equal(np.asarray(f(x)), [2.0, 4.0])
    assert np.array_equal(np.asarray(g(x, 3)), [3.0, 6.0])
    assert isinstance(f, qd.jit.JitFunction) and f.__name__ == "f"


def test_later_calls_replay_without_running_python():
    calls = []

    @qd.jit
    def f(x, y):
        calls.append(1)
        return qd.sqrt(x * x + y) - x.shape[0]

    x, y = _f32(1.0, 2.0, 3.0), _f32(4.0, 5.0, 6.0)
    first = np.asarray(f(x, y))
    x2, y2 = _f32(7.0, 8.0, 9.0), _f32(1.0, 1.0, 1.0)
    second = np.asarray(f(x2, y2))
    assert len(calls) == 1 and f.traces == 1
    assert np.array_equal(first, np.asarray(qd.sqrt(x * x + y) - 3))
    assert np.array_equal(second, np.asarray(qd.sqrt(x2 * x2 + y2) - 3))


def test_new_shapes_dtypes_and_structure_retrace():
    @qd.jit
    def f(xs):
        return xs[0] + xs[1]

    a, b = _f32(1.0, 2.0), _f32(3.0, 4.0)
    f((a, b))
    f((b, a))
    assert f.traces == 1
    f((_f32(1.0), _f32(2.0)))  # new shape
    assert f.traces == 2
    f((qd.astype(a, qd.float64), b))  # new dtype
    assert f.traces == 3
    f([a, b])  # a list, not a tuple
    assert f.traces == 4
    f((a, a))  # one array twice
    assert f.traces == 5
    r = f((b, b))
    assert f.traces == 5 and np.array_equal(np.asarray(r), [6.0, 8.0])


def test_static_argnums_and_argnames():
    @qd.jit(static_argnames="power")
    def f(x, power):
        y = x
        for _ in range(power - 1):  # Python control flow on a static value
            y = y * x
        return y

    x = _f32(2.0, 3.0)
    assert np.array_equal(np.asarray(f(x, power=3)), [8.0, 27.0])
    assert np.array_equal(np.asarray(f(x, 3)), [8.0, 27.0])
    assert np.array_equal(np.asarray(f(x, power=2)), [4.0, 9.0])
    assert f.traces == 2


def test_static_arguments_must_be_hashable():
    @qd.jit(static_argnums=(1,))
    def f(x, opts):
        return x * opts[0]

    with pytest.raises(TypeError, match="'opts'.*hashable"):
        f(_f32(1.0), [2.0])


def test_python_scalars_are_static():
    @qd.jit
    def f(x, s):
        return x * s

    x = _f32(1.0, 2.0)
    assert np.array_equal(np.asarray(f(x, 2.0)), [2.0, 4.0])
    assert np.array_equal(np.asarray(f(x, 3.0)), [3.0, 6.0])
    assert f(x, 3.0).dtype == qd.float32
    assert f.traces == 2


def _line_of(fn, text):
    import inspect

    lines, start = inspect.getsourcelines(fn)
    return start + next(i for i, t in enumerate(lines) if text in t)


def test_control_flow_on_traced_values_is_refused_with_the_line():
    def f(x):
        if qd.sum(x) > 0:
            return x
        return -x

    with pytest.raises(qd.jit.TracerBoolConversionError) as info:
        qd.jit(f)(_f32(1.0))
    assert isinstance(info.value, TypeError)
    text = str(info.value)
    assert f'line {_line_of(f, "if qd.sum")}' in text and __file__ in text
    assert "qd.where" in text and "static_argnums" in text


@pytest.mark.parametrize("how", ["float", "int", "item", "tolist", "range", "numpy"])
def test_conversions_to_python_values_are_refused(how):
    def f(x):
        if how == "float":
            return float(x[0]) * x
        if how == "int":
            return x * int(x[0])
        if how == "item":
            return x * x[0].item()
        if how == "tolist":
            return qd.asarray(x.tolist())
        if how == "range":
            return qd.stack([x for _ in range(qd.astype(x[0], qd.int64))])
        return qd.asarray(np.asarray(x))

    with pytest.raises(qd.jit.TracerConversionError, match="traced by qd.jit") as info:
        qd.jit(f)(_f32(1.0, 2.0))
    assert "line" in str(info.value) and isinstance(info.value, TypeError)


def test_shape_dependent_python_is_allowed():
    @qd.jit
    def f(x):
        n = len(x)
        return x * (1.0 / n) + x.shape[0] + x.ndim + x.size

    x = _f32(1.0, 2.0)
    assert np.allclose(np.asarray(f(x)), np.asarray(x) / 2 + 5)


def test_data_dependent_shapes_are_caught_at_replay():
    @qd.jit
    def f(x):
        return x[x > 0.0] * 2.0

    f(_f32(1.0, -1.0, 2.0))
    with pytest.raises(qd.jit.JitTraceError, match="depends on the values"):
        f(_f32(1.0, 2.0, 3.0))


def test_globals_are_read_at_each_call():
    w = _f32(1.0, 1.0)

    @qd.jit
    def f(x):
        return x + w

    x = _f32(1.0, 2.0)
    f(x)
    w[...] = 10.0
    assert np.array_equal(np.asarray(f(x)), [11.0, 12.0])


def test_in_place_updates_and_indexing_replay():
    @qd.jit
    def f(x, y):
        z = qd.zeros_like(x)
        z[1:] = x[:-1] * 2.0
        z += y
        return qd.reshape(z, (2, 2)).T, z[::2]

    x, y = _f32(1.0, 2.0, 3.0, 4.0), _f32(1.0, 1.0, 1.0, 1.0)
    a1, b1 = f(x, y)
    x2 = _f32(5.0, 6.0, 7.0, 8.0)
    a2, b2 = f(x2, y)
    assert f.traces == 1
    assert np.array_equal(np.asarray(a2), [[1.0, 13.0], [11.0, 15.0]])
    assert np.array_equal(np.asarray(b2), [1.0, 13.0])


def test_matmul_reductions_and_nested_outputs():
    @qd.jit
    def f(a, b):
        m = a @ b
        return {"m": m, "s": [qd.sum(m, axis=0), qd.max(m)]}

    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    f(qd.asarray(a), qd.asarray(b))
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((4, 2))
    out = f(qd.asarray(a), qd.asarray(b))
    assert np.allclose(np.asarray(out["m"]), a @ b)
    assert np.allclose(np.asarray(out["s"][0]), (a @ b).sum(0))
    assert np.allclose(float(out["s"][1]), (a @ b).max())


def test_numpy_arrays_are_inputs_as_in_jax():
    """A NumPy array argument is an input (keyed by shape and dtype, read at each call), as
    `jax.jit` takes it, not a static value; a static NumPy argument stays unhashable."""
    @qd.jit
    def f(x, y):
        return x * 2.0 + y

    a, b = np.arange(4.0), np.ones(4)
    np.testing.assert_array_equal(np.asarray(f(a, b)), a * 2.0 + b)
    np.testing.assert_array_equal(np.asarray(f(b, y=a)), b * 2.0 + a)
    np.testing.assert_array_equal(np.asarray(f(a + 1.0, b)), (a + 1.0) * 2.0 + b)
    assert f.traces == 2  # (y by keyword is another signature)

    @qd.jit(static_argnums=1)
    def g(x, table):
        return x * 2.0

    with pytest.raises(TypeError, match="hashable"):
        g(a, np.ones(2))


def test_a_package_imported_through_a_path_with_dotdot_is_traced():
    """qdarray imported by a sys.path entry with ".." in it (a script's `sys.path.insert(0,
    "../..")`): its code objects name their files through that path, and the trace must still
    see the calls. It once recorded none, so every replay returned the traced call's result."""
    import subprocess
    import sys
    from pathlib import Path

    repo = Path(__file__).resolve().parents[2]
    child = (
        "import sys\n"
        f"sys.path.insert(0, {str(repo / 'tests' / '..')!r})\n"
        "import numpy as np, qdarray as qd\n"
        "assert '..' in qd.__file__, qd.__file__\n"
        "jf = qd.jit(lambda a, x: (a * x + 1.0) * 2.0)\n"
        "a, x = qd.asarray(np.arange(4.0)), qd.asarray(np.ones(4))\n"
        "jf(a, x)\n"
        "got = jf(a, x * 3.0)\n"
        "(program,) = jf.programs.values()\n"
        "assert program.steps, 'nothing was traced'\n"
        "np.testing.assert_array_equal(np.asarray(got), (np.arange(4.0) * 3.0 + 1.0) * 2.0)\n"
        "print('ok')\n")
    out = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                         cwd="/", check=False)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr[-2000:]
