"""Parallel stages on Vulkan: grid-stride loops, atomics that every iteration aims at one
element reduced per workgroup (kernels/codegen/spirv/blocks.py), the max-reducer's single
pass, and 32-bit element offsets, against NumPy. The dispatch is also capped at 2
workgroups, so that each invocation runs many iterations."""

from __future__ import annotations

import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.vulkan import target as _kernels


@pytest.fixture(params=[None, 2], ids=["groups-default", "groups-2"])
def groups(request, monkeypatch):  # type: ignore[no-untyped-def]
    if request.param is not None:
        monkeypatch.setattr(_kernels, "GROUPS", request.param)
    return request.param


@qd.kernel
def folds(x: qd.Array[qd.float32, 1], z: qd.Array[qd.float32, 1], w: qd.Array[qd.int64, 1],
          y: qd.Array[qd.float32, 1],
          top: qd.Array[qd.float32, 2], low: qd.Array[qd.int64, 1],
          big: qd.Array[qd.uint32, 1], k: qd.Array[qd.int32, 1], c: qd.int32):
    for i in range(x.shape[0]):
        if w[i] == 7:
            continue                          # the next iteration of this invocation
        y[0] += x[i]                          # one element for every iteration: reduced
        qd.atomic_max(top[1, c], z[i])        # reduced (a constant and a parameter index)
        qd.atomic_min(low, 0, w[i])           # reduced
        qd.atomic_max(big, 0, qd.uint32(w[i]))  # reduced
        k[i % 3] += 1                         # the element depends on i: an atomic each


def _disassembly(kernel) -> str:  # type: ignore[no-untyped-def]
    return _disassembly_of(next(iter(kernel._launchers[False].values())))


@pytest.mark.parametrize("n", [1, 300, 20_000])
def test_one_element_atomics_are_reduced_per_workgroup(device, groups, n):
    rng = np.random.default_rng(n)
    xs = rng.integers(-50, 50, n).astype(np.float32)  # integers: any order sums exactly
    zs = rng.normal(size=n).astype(np.float32)
    zs[rng.random(n) < 0.05] = np.nan  # a NaN never wins a maximum
    ws = rng.integers(-(2**40), 2**40, n).astype(np.int64)
    ws[::5] = 7
    keep = ws != 7
    c = 2
    args = [qd.asarray(xs, device=device), qd.asarray(zs, device=device),
            qd.asarray(ws, device=device),
            qd.asarray(np.array([-0.0], np.float32), device=device),
            qd.full((2, 4), -1e30, dtype=qd.float32, device=device),
            qd.asarray(np.array([2**62], np.int64), device=device),
            qd.asarray(np.array([5], np.uint32), device=device),
            qd.zeros(3, dtype=qd.int32, device=device)]
    folds(*args, c)
    y, top, low, big, k = (np.asarray(a.to_device("cpu")) for a in args[3:])
    kept = xs[keep]
    if kept.size:
        assert y[0] == np.float32(kept.sum())
    else:
        assert y[0] == 0.0 and np.signbit(y[0])  # -0.0 plus nothing stays -0.0
    want_top = np.full((2, 4), -1e30, np.float32)
    finite = zs[keep][~np.isnan(zs[keep])]
    want_top[1, c] = max(np.float32(-1e30), finite.max(initial=np.float32(-1e30)))
    np.testing.assert_array_equal(top, want_top)
    assert low[0] == min(2**62, int(ws[keep].min(initial=2**62)))
    assert big[0] == max(5, int(ws[keep].astype(np.uint32).max(initial=5)))
    want_k = np.bincount(np.arange(n)[keep] % 3, minlength=3)
    np.testing.assert_array_equal(k, want_k)
    if groups is None:
        text = _disassembly(folds)
        assert "OpControlBarrier" in text
        assert text.count("OpAtomicIAdd") == 1  # k's; the reduced ones are one each:
        assert text.count("OpAtomicSMin") == 1
        assert text.count("OpAtomicUMax") == 1


@qd.kernel
def read_back(x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[0] += x[i]
        x[i] = y[0]  # the loop reads y: every update must be an atomic of its own


def test_an_element_the_loop_also_reads_keeps_its_atomics(device):
    x = qd.ones(64, dtype=qd.float32, device=device)
    y = qd.zeros(1, dtype=qd.float32, device=device)
    read_back(x, y)
    assert float(y[0]) == 64.0
    assert "OpControlBarrier" not in _disassembly(read_back)


@qd.kernel
def locals_restart(a: qd.Array[qd.int32, 1], out: qd.Array[qd.int32, 1]):
    for i in range(a.shape[0]):
        s = 0
        for j in range(a[i]):
            s += j
        out[i] = s


def test_each_iteration_of_an_invocation_starts_its_locals_afresh(device, groups):
    a = np.arange(3000, dtype=np.int32) % 9
    out = qd.zeros(3000, dtype=qd.int32, device=device)
    locals_restart(qd.asarray(a, device=device), out)
    np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), a * (a - 1) // 2)


@pytest.mark.parametrize("n", [1, 5_000, 70_001])
def test_the_max_reducer_is_one_pass_with_one_atomic_per_workgroup(device, groups, n):
    """ad/sizing/max_reducer.py on a device with 64-bit atomics: one launch folding the strided
    maxima of each work-item into one uint64 element, reduced per workgroup first; the 2-D chain's
    maximum is over the cross product of its axes."""
    from qdarray import _dtypes
    from qdarray.ad.sizing.bounds import Const, LoopVar, MaxOverRange, Read
    from qdarray.ad.sizing.max_reducer import Reducer, chain_of
    from qdarray.backends.vulkan import _instance
    from qdarray.kernels.types import ArrayType

    dev = qd.Device(device)
    if not _instance.state(dev.index).features["int64_atomics"]:
        pytest.skip(f"{dev} has no 64-bit atomics: the reducer writes partial maxima")
    host = np.random.default_rng(n).integers(-(2**31), 2**31 - 1, n).astype(np.int32)
    data = qd.asarray(host, device=device)
    i, j = LoopVar(1, "i"), LoopVar(2, "j")
    one = Reducer(chain_of(MaxOverRange(i, Const(0), Const(n), Read("d", (i,)))),
                  {"d": ArrayType(_dtypes.int32, 1)}, _kernels.TARGET, dev)
    assert one.single
    for _ in range(3):  # the two result elements alternate
        assert one.run({"d": data}, [], [0], [n]) == host.max()
    side = max(1, int(n ** 0.5))
    grid = qd.reshape(data[:side * (n // side)], (side, n // side))
    two = Reducer(chain_of(MaxOverRange(i, Const(1), Const(side), MaxOverRange(
        j, Const(0), Const(n // side), Read("g", (i, j))))),
        {"g": ArrayType(_dtypes.int32, 2)}, _kernels.TARGET, dev)
    if side > 1:
        want = host[:side * (n // side)].reshape(side, n // side)[1:].max()
        assert two.run({"g": grid}, [], [1, 0], [side - 1, n // side]) == want
    if groups is None:
        text = _disassembly_of(one.compiled())
        assert "OpControlBarrier" in text
        assert text.count("OpAtomicUMax") == 1


def _disassembly_of(launcher, key=None) -> str:  # type: ignore[no-untyped-def]
    dis = shutil.which("spirv-dis")
    if dis is None:
        pytest.skip("spirv-dis is not installed (Debian: apt-get install spirv-tools)")
    text = ""
    variant = next(iter(launcher.variants.values())) if key is None else \
        launcher.variants[key]
    for stage in variant.program.stages:
        with tempfile.NamedTemporaryFile(suffix=".spv") as fh:
            fh.write(stage.spirv)
            fh.flush()
            text += subprocess.run([dis, fh.name], capture_output=True, text=True).stdout
    return text


@qd.kernel
def gather(x: qd.Array[qd.float32, 2], idx: qd.Array[qd.int64, 1], out: qd.Array[qd.float32, 1]):
    for i in range(idx.shape[0]):
        out[i] = x[idx[i] % x.shape[0], (i * 7) % x.shape[1]]


@pytest.mark.parametrize("narrow", [True, False], ids=["offsets-32-bit", "offsets-64-bit"])
def test_element_offsets_in_32_or_64_bits_agree(device, monkeypatch, narrow):
    """Buffers below 2 GiB (_kernels.NARROW) get kernels whose element offsets are 32-bit;
    forced to 64 bits here by a NARROW of 1 byte. Reversed and strided views included."""
    if not narrow:
        monkeypatch.setattr(_kernels, "NARROW", 1)
    host = np.arange(40 * 30, dtype=np.float32).reshape(40, 30)
    base = qd.asarray(host, device=device)
    idx = np.random.default_rng(1).integers(0, 2**40, 500)
    for view, want in ((base, host), (base[::-1, ::2], host[::-1, ::2])):
        out = qd.zeros(500, dtype=qd.float32, device=device)
        gather(view, qd.asarray(idx, device=device), out)
        rows = idx % want.shape[0]
        cols = (np.arange(500) * 7) % want.shape[1]
        np.testing.assert_array_equal(np.asarray(out.to_device("cpu")), want[rows, cols])
    launcher = next(iter(gather._launchers[False].values()))
    assert {key[1] for key in launcher.variants} >= {narrow}
    text = _disassembly_of(launcher, next(k for k in launcher.variants if k[1] is narrow))
    assert ("OpIMul %int " in text) is narrow  # x's offsets (i * 7 is int64 either way)
