"""Packed adstack layouts (ad/sizing/packed_layout.py, ad/transform/adstack.py): the arrays the
packer builds, read back on the host, place every entry of every thread exactly once within the sum
of the capacities, keep the entries of one depth of a group adjacent (coalesced), and refuse the
entries past a thread's capacity; reverse kernels give the same gradients in every layout
(groups of 1, 8 and 32 threads on the interpreter and on numba), zero-trip groups included,
and report overflows in each."""

from __future__ import annotations

import numpy as np
import pytest

import qdarray as qd
from qdarray.ad.launch import launch_reverse
from qdarray.ad.sizing import thread_caps
from qdarray.ad.sizing.packed_layout import Packer
from qdarray.ad.transform.adstack import POS_BITS
from qdarray.ad.transform.plan import StackRecord
from qdarray.backends.cpu.target import CpuKernels
from qdarray.kernels.interp import InterpTarget
from qdarray.kernels.ops.adstack import AdStack, entry, own_depths
from qdarray.kernels.target import StackLayout


def grouped(base: type, group: int, narrow: bool = False) -> object:
    """`base`'s target with packed adstacks in groups of `group` threads (`narrow`: with the
    reverse kernel's 32-bit position variant, passes/lower_adstack.py)."""
    target = type(f"{base.__name__}{group}{'n' if narrow else ''}", (base,), {})()
    # (the CPU target sets its own per instance)
    target.adstack = StackLayout(group=group, narrow=narrow)
    return target


TARGETS = {"interp": InterpTarget, "cpu": CpuKernels}


def workload(kind: str, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if kind == "uniform":
        return rng.integers(0, 64, n)
    if kind == "skewed":  # 2% of threads loop long, the rest 0..10
        a = rng.integers(0, 11, n)
        a[rng.random(n) < 0.02] = 300
        return a
    if kind == "zero groups":  # whole groups (8 and 32 threads) without trips
        a = rng.integers(0, 5, n)
        a[:70] = 0
        a[100:164] = 0
        return a
    assert kind == "ties"
    return np.full(n, 7)


def slices(packed: object, sid: int, n: int) -> list[tuple[int, ...]]:
    """(row, lim, pos, tail, end, run, base, width) of each thread, read back from the
    packer's arrays as ad/adstack.thread_slice computes them in a kernel (`lim`: the depths
    of the group's row that hold an entry of the thread; `run`: the first of them, at which
    every thread of the group with an entry at depth 0 has one, `width` of them)."""
    lay = np.asarray(packed.layout)
    table, rows = np.asarray(packed.table), np.asarray(packed.rows)
    tab, rws, pws, group = (int(v) for v in lay[4 * sid:4 * sid + 4])
    out = []
    per = 64 // POS_BITS
    for t in range(n):
        if group == 1:
            row, lim, pos, m = tab + t, 0, 0, 1
        else:
            g = t // group
            r0, r1 = int(rows[rws + g]), int(rows[rws + g + 1])
            m = int(table[tab + r0])
            row, lim = tab + r0 + 1, r1 - r0 - 2 - m
            word = int(rows[pws + t // per]) & ((1 << 64) - 1)
            pos = (word >> (t % per * POS_BITS)) & ((1 << POS_BITS) - 1)
        at = row + lim + min(pos, m)
        first = int(table[at])
        end = int(table[at + 1]) if pos < m else first
        # the depths of the row holding an entry of the thread: a prefix of them
        holds = [int(table[row + d + 1]) - int(table[row + d]) > pos for d in range(lim)]
        own = sum(holds)
        assert holds == [True] * own + [False] * (lim - own)
        assert own_depths(table, row, lim, pos) == own  # ADSTACK_OWN's binary search
        run = base = width = 0
        if lim > 0:
            width = int(table[row + 1]) - int(table[row])
            base = int(table[row]) + pos
            counts = [int(table[row + d + 1]) - int(table[row + d]) for d in range(lim)]
            full = sum(c == width for c in counts)
            assert counts[:full] == [width] * full
            assert own_depths(table, row, lim, width - 1) == full
            run = min(full, own)
            for d in range(run):  # the run's positions are the table's
                assert base + d * width == int(table[row + d]) + pos
        out.append((row, own, pos, first - own, end, run, base, width))
    return out


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("group", [1, 8, 32])
@pytest.mark.parametrize("kind", ["uniform", "skewed", "zero groups", "ties"])
def test_every_entry_has_one_place_and_depths_are_adjacent(target, group, kind):
    n = 203
    caps = workload(kind, n) + 1
    stacks = [StackRecord(AdStack(0, "v", qd.float32), 0),
              StackRecord(AdStack(1, "w", qd.float32), 0)]
    other = np.random.default_rng(1).integers(0, 3, n)
    packer = Packer(grouped(TARGETS[target], group), None)
    given = {0: caps.astype(np.int64), 1: other.astype(np.int64)}
    packed = packer.pack(stacks, 2, [int(caps.max()), int(other.max())], [n],
                         lambda k, m: (given[k], 0))
    table = np.asarray(packed.table)
    assert packed.sizes == {qd.float32: int(caps.sum() + other.sum())}   # packed: the sum
    assert packed.entries == [int(caps.sum()), int(other.sum())]
    seen: dict[int, tuple[int, int, int]] = {}
    start = 0
    for sid, c in ((0, caps), (1, other)):
        where = slices(packed, sid, n)
        for t in range(n):
            for d in range(int(c[t]) + 3):
                a, ok = entry(table, where[t], d)
                assert ok == (d < c[t]), (sid, t, d)
                if ok:
                    assert start <= a < start + c.sum() and a not in seen, (sid, t, d, a)
                    seen[a] = (sid, t, d)
        if group > 1:  # a group's entries of one depth: one run, in rank order
            for g in range(0, n, group):
                lanes = range(g, min(g + group, n))
                lim = max(where[t][1] for t in lanes)  # the group's row
                for d in range(lim):
                    live = sorted((where[t][2], entry(table, where[t], d)[0])
                                  for t in lanes if d < c[t])
                    runs = [a for _, a in live]
                    assert runs == list(range(runs[0], runs[0] + len(runs))), (g, d)
        start += int(c.sum())
    assert len(seen) == caps.sum() + other.sum()
    if group == 32 and kind == "uniform":  # mostly coalesced: few entries past lim
        tails = sum(max(int(caps[t]) - where_lim, 0) for t, where_lim in
                    ((t, slices(packed, 0, n)[t][1]) for t in range(n)))
        assert tails < 0.1 * caps.sum()
        assert packed.index_bytes < 0.2 * 4 * caps.sum()


@pytest.mark.parametrize("group", [1, 32])
def test_an_empty_launch_and_one_thread(group):
    stacks = [StackRecord(AdStack(0, "v", qd.float64), 0),
              StackRecord(AdStack(1, "s", qd.float64), None)]
    packer = Packer(grouped(InterpTarget, group), None)
    packed = packer.pack(stacks, 2, [0, 5], [0], lambda k, m: None)
    assert packed.sizes == {qd.float64: 5} and packed.entries == [0, 5]
    where = slices(packed, 1, 1)[0]
    valid = [entry(np.asarray(packed.table), where, d)[1] for d in range(6)]
    assert valid == [True] * 5 + [False]


def test_a_group_larger_than_the_ranks_allow():
    with pytest.raises(ValueError, match="groups adstacks by 12 threads"):
        Packer(grouped(InterpTarget, 12), None)


# -- reverse kernels in each layout ---------------------------------------------------------


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        w = x[i] * 0.5
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
            if v > 0.3:
                w = w * 0.9 + v
        y[0] += v + w


@qd.kernel
def halving(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int64, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        k = a[i]
        while k > 0:  # no symbolic bound: per-thread counts from the counting pass
            v = v - 0.1 * v * v + 0.01
            k = k - 1 - k // 4
        y[0] += v


def reverse(kern, xs, trips, target):
    x = qd.asarray(xs, requires_grad=True)
    a = qd.asarray(trips)
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    kern(x, a, y)
    y.grad[...] = 1.0
    launch_reverse(kern, (x, a, y), target)
    return np.asarray(x.grad), qd.ad.stats()


@pytest.mark.parametrize("target", ["interp", "cpu"])
@pytest.mark.parametrize("kern", [logistic, halving], ids=["expressions", "counted"])
@pytest.mark.parametrize("kind", ["uniform", "skewed", "zero groups"])
def test_gradients_are_the_same_in_every_layout(target, kern, kind):
    n = 300
    xs = np.random.default_rng(2).uniform(0.1, 0.9, n).astype(np.float32)
    trips = workload(kind, n)
    got = {}
    layouts = [(g, False) for g in (1, 8, 32)]
    if target == "cpu":  # the variant with 32-bit positions (numba compiles it)
        layouts += [(g, True) for g in (1, 8, 32)]
    for group, narrow in layouts:
        qd.ad.reset_stats()
        got[group, narrow], stats = reverse(kern, xs, trips,
                                            grouped(TARGETS[target], group, narrow))
        if kern is halving:
            assert stats["counting_passes"] == 1
    for layout in layouts:
        assert np.array_equal(got[1, False], got[layout]), layout
    got[1] = got[1, False]
    if kern is halving:  # d y / d x = the product of (1 - 0.2 v) over the loop, in float64
        want = np.ones(n)
        for i in range(n):
            v, k = float(xs[i]), int(trips[i])
            while k > 0:
                want[i] *= 1 - 0.2 * v
                v = v - 0.1 * v * v + 0.01
                k = k - 1 - k // 4
        np.testing.assert_allclose(got[1], want, rtol=2e-5, atol=1e-7)


@pytest.mark.parametrize("target", ["interp", "cpu", "cpu narrow"])
@pytest.mark.parametrize("group", [1, 32])
@pytest.mark.parametrize("short", ["deepest", "shallow"], ids=["tail", "row"])
def test_overflow_is_detected_in_each_layout(target, group, short, monkeypatch):
    """Capacities one short for one thread: the deepest thread of a group overflows in its
    contiguous tail, a shallow one inside the group's row; either is reported, nothing is
    written elsewhere."""
    n = 64
    trips = np.arange(n) % 13
    trips[5] = 40
    victim = 5 if short == "deepest" else 7
    real = thread_caps.ThreadCaps.source

    def short_caps(self, flat, args, threads, uniform):
        per_thread = real(self, flat, args, threads, uniform)

        def get(k, m):
            arr, at = per_thread(k, m)
            arr = np.array(arr[at:at + m])
            arr[victim] -= 1
            return arr, 0
        return get
    monkeypatch.setattr(thread_caps.ThreadCaps, "source", short_caps)
    xs = np.full(n, 0.5, np.float32)
    base, _, narrow = target.partition(" ")
    with pytest.raises(qd.ad.AdStackOverflowError, match="depth reached"):
        reverse(logistic, xs, trips, grouped(TARGETS[base], group, bool(narrow)))


def test_narrow_positions_run_only_where_the_tape_fits_31_bits(monkeypatch):
    """A target with `StackLayout.narrow` runs the reverse kernel's 32-bit variant (its table
    argument the int32 view of the table) when every heap position and table index fits 31
    bits, and the 64-bit kernel otherwise; both give the same gradients."""
    from qdarray import _dtypes
    from qdarray.ad import launch
    from qdarray.ad.sizing.packed_layout import Packed

    class Table:
        def __init__(self, size: int) -> None:
            self.size = size

    def layout(entries: int, table: int) -> Packed:
        return Packed(None, Table(table), None, {_dtypes.float32: entries}, [entries], 0)

    assert launch.fits_narrow(layout(2**31 - 1, 2**30 - 1))
    assert not launch.fits_narrow(layout(2**31, 10))
    assert not launch.fits_narrow(layout(10, 2**30))
    ran = []
    real = launch.ReverseLauncher.runner

    def spy(self, packed, call):
        kern = real(self, packed, call)
        ran.append(kern is self.narrow)
        return kern
    monkeypatch.setattr(launch.ReverseLauncher, "runner", spy)
    n = 100
    xs = np.random.default_rng(3).uniform(0.1, 0.9, n).astype(np.float32)
    trips = workload("skewed", n)
    target = grouped(CpuKernels, 32, narrow=True)
    narrow, stats = reverse(logistic, xs, trips, target)
    assert stats["adstack_position_bits"] == 32
    monkeypatch.setattr(launch, "fits_narrow", lambda packed: False)
    wide, stats = reverse(logistic, xs, trips, target)
    assert stats["adstack_position_bits"] == 64
    assert ran == [True, False]
    assert np.array_equal(narrow, wide)
