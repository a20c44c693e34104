"""Regions and snapshots: what a recorded reverse still needs, and copies of what later
writes overwrite of it.

A kernel launch reads a region of each array argument and writes a region of some
(`kernels/regions.py` derives them from the kernel, evaluated here at launch as boxes: per
axis a half-open interval). A namespace operation on the tape keeps whole arrays. The tape
indexes these *needed* regions per memory (`Needs`). A later write to that memory (a kernel
launch, `x[key] = value`) that meets one of them first copies the part of its own write
region that meets it (a `Snapshot`); the reverse puts the copy back when it passes the write,
so every reverse sees what its launch or operation saw. A launch that reads and then
overwrites the same elements (`x[i] = f(x[i])`, one array passed for a read and a written
parameter) keeps the overwritten region the same way, and its reverse runs on it.

Regions are compared in one array's coordinates when both come from arrays with the same
layout over the memory (same first element, strides and shape: the same array, passed again),
and otherwise by the byte span they cover, which can only find more overlap than there is
(the copy is then larger, never wrong).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..._array import Array
from ..._errors import AutodiffError
from ...buffer_view import BufferView
from ...kernels.regions import Box, compile_boxes


@dataclasses.dataclass(slots=True)
class Region:
    """A box of an array: `array` (an Array; a BufferView's base) in its coordinates.
    `key` names the native array the box indexes: regions with the same key compare box
    to box, others by the bytes they cover."""

    array: Array
    key: int
    box: Box


def _span(r: Region) -> tuple[int, int]:
    """The bytes [lo, hi) region `r` covers, comparable within one memory."""
    a = r.array
    first, strides = a._device.backend.byte_layout(a._data)
    lo = hi = int(first)
    for (p, z), st in zip(r.box, strides, strict=True):
        lo += min(p * st, (z - 1) * st)
        hi += max(p * st, (z - 1) * st)
    return lo, hi + a._dtype.itemsize


def region(a: Any, b: Box | None = None) -> Region | None:
    """The region `b` of argument `a` (an Array or BufferView; None: all of it), None when
    empty or when `a` is not an Array (a NumPy array passed directly counts no writes). A
    BufferView's box is moved to its base's coordinates."""
    t = type(a)
    if t is BufferView:
        base = a._base
        if b is None:
            b = ((0, a._size),)
        if base._data.ndim != 1:
            b = tuple((0, n) for n in base._data.shape)
        else:
            b = ((a._offset + b[0][0], a._offset + b[0][1]),)
        a = base
    elif t is not Array:
        return None
    elif b is None:
        b = tuple((0, n) for n in a._data.shape)
    for lo, z in b:
        if z <= lo:
            return None
    return Region(a, id(a._data), b)


def meet_boxes(w: Box, n: Box) -> Box | None:
    """The intersection of boxes `w` and `n` of one layout (None where it is empty)."""
    out = []
    for (a, z), (c, d) in zip(w, n, strict=True):
        lo = a if a > c else c
        hi = z if z < d else d
        if hi <= lo:
            return None
        out.append((lo, hi))
    return tuple(out)


def meet(w: Region, n: Region) -> Box | None:
    """The part of write region `w` (in its coordinates) that may overwrite region `n`."""
    if w.key != n.key:
        ws, ns = _span(w), _span(n)
        return None if ws[1] <= ns[0] or ns[1] <= ws[0] else w.box
    return meet_boxes(w.box, n.box)


def hull(a: Box, b: Box) -> Box:
    """The smallest box holding boxes `a` and `b` (of one rank)."""
    if len(a) == 1:  # the common ranks spelled out: this runs at every recorded launch
        (p, q), (r, s) = a[0], b[0]
        return ((p if p < r else r, q if q > s else s),)
    if len(a) == 2:
        (p, q), (r, s) = a[0], b[0]
        (p2, q2), (r2, s2) = a[1], b[1]
        return ((p if p < r else r, q if q > s else s), (p2 if p2 < r2 else r2,
                                                          q2 if q2 > s2 else s2))
    return tuple([(p if p < r else r, q if q > s else s)
                  for (p, q), (r, s) in zip(a, b, strict=True)])


class Needs:
    """The regions recorded reverses need, per memory: one box per layout (the hull of the
    regions added through it), so the index stays as small as the number of layouts."""

    def __init__(self) -> None:
        self.by_memory: dict[Any, dict[int, Region]] = {}

    def add(self, r: Region) -> None:
        layouts = self.by_memory.get(r.array._buffer)
        if layouts is None:
            layouts = self.by_memory[r.array._buffer] = {}
        old = layouts.get(r.key)
        if old is None:
            layouts[r.key] = Region(r.array, r.key, r.box)
        elif old.box != r.box:
            old.box = hull(old.box, r.box)  # (for a box inside the old one: the same)

    def add_array(self, a: Array) -> None:
        r = region(a)
        if r is not None:
            self.add(r)

    def discharge(self, w: Region) -> None:
        """Forget the needed region of `w`'s layout when the write `w` covers all of it: the
        write's snapshot puts those values back before any reverse recorded so far runs, so a
        later write of the same elements needs no copy of its own (until a later read needs
        them again). (clear_grid then p2g's atomic adds: one copy of the grid, not two.)"""
        layouts = self.by_memory.get(w.array._buffer)
        n = layouts.get(w.key) if layouts else None
        if n is not None and all(a <= c and d <= z for (a, z), (c, d)
                                 in zip(w.box, n.box, strict=True)):
            del layouts[w.key]  # type: ignore[union-attr]

    def overwritten(self, w: Region) -> Box | None:
        """The part of write region `w` that meets a needed region (their hull; None)."""
        out = None
        for n in self.by_memory.get(w.array._buffer, {}).values():
            m = meet(w, n)
            if m is not None:
                out = m if out is None else hull(out, m)
        return out


@dataclasses.dataclass(slots=True)
class Snapshot:
    """What `array[box]` held before a write; put back before (or, for a launch that reads
    what it wrote itself, after) that write's reverse."""

    array: Array
    key: int
    box: Box
    data: Any  # a native copy
    before: bool
    nbytes: int

    def restore(self) -> None:
        array = self.array
        array._device.backend.restore_region(array._data, _slices(self.box), self.data)


def restore(snaps: list[Snapshot], before: bool) -> None:
    """Put back the snapshots of a write that go before (or after) its reverse."""
    for snap in snaps:
        if snap.before is before:
            snap.restore()


def rewind(snaps: list[Snapshot], chain: Any, before: bool | None = None) -> None:
    """Undo a recorded write as the reverse passes it: its snapshots (those of `before`;
    None: all) go back, and each memory it moved from generation g0 to g1 (`chain`: tuples
    that start (memory, g0, g1)), still at g1 (no write the tape did not see came after),
    is at g0 again."""
    for snap in snaps:
        if before is None or snap.before is before:
            snap.restore()
    for c in chain:
        buf, g1 = c[0], c[2]
        if g1 is not None and buf.generation == g1:
            buf.generation = c[1]


def check_unseen_writes(kernel: str, chain: list[tuple[Any, int, int, bool]]) -> None:
    """Raise when an array a launch read and wrote was written after it by a write the tape
    did not see (its generation is not the one the launch left)."""
    for buf, _, after, read in chain:
        if read and buf.generation != after:
            raise AutodiffError(
                f"An array kernel '{kernel}' read and wrote was written after the launch was "
                "recorded by a write the tape did not see (a kernel outside it, or an export "
                "such as np.asarray or DLPack), so its reverse would use the new values. "
                "Write it inside the tape, or use a copy for the later writes.")


def _slices(b: Box) -> tuple[slice, ...]:
    return tuple(slice(a, z) for a, z in b)


def take(array: Array, b: Box, before: bool) -> Snapshot:
    """A copy of `array[b]` (as it is now)."""
    device = array._device
    data = device.backend.save_region(array._data, _slices(b), device)
    return Snapshot(array, id(array._data), b, data, before, _nbytes(array, b))


def _nbytes(array: Array, b: Box) -> int:
    return math.prod([z - a for a, z in b]) * array._dtype.itemsize  # (np.prod: 20 us)


def take_within_limit(array: Array, b: Box, before: bool, by: str, held: int) -> Snapshot:
    """`take`, when the tapes' snapshots (`held` bytes now) stay within
    `qd.ad.set_memory_limit`; a MemoryError with the figures otherwise."""
    from ..sizing.checkpoint_stride import memory_limit

    limit = memory_limit()
    n = _nbytes(array, b)
    if limit is not None and held + n > limit:
        raise MemoryError(
            f"{by} overwrites {n} bytes of an array (shape {array.shape}, region "
            f"{[list(r) for r in b]}) that a recorded reverse needs, and the tapes already "
            f"keep {held} bytes of such copies: more than the {limit} bytes of "
            "qd.ad.set_memory_limit. Raise the limit, or keep each step's state in its own "
            "slice of a time-indexed array (x[t + 1] computed from x[t]), which needs no "
            "copies.")
    return take(array, b, before)


def final_state(records: Any) -> tuple[list[Snapshot], list[tuple[Any, int]]]:
    """Copies of what the reverses of `records` will put back (each region once), and the
    generation of every memory a recorded write moved: what `backward` restores at its end,
    so the arrays hold their final values again."""
    finals: dict[Any, Snapshot] = {}
    generations: dict[int, tuple[Any, int]] = {}
    for rec in records:
        chain = getattr(rec, "chain", None)
        if chain is not None:  # a kernel launch
            for c in chain:
                buf = c[0]
                generations[id(buf)] = (buf, buf.generation)
            snaps = rec.snaps
        elif hasattr(rec, "snaps"):  # a namespace write
            buf = rec.buffer
            generations[id(buf)] = (buf, buf.generation)
            snaps = rec.snaps
        else:
            continue
        for s in snaps:
            k = (id(s.array._buffer), s.key, s.box)
            if k not in finals:
                finals[k] = take(s.array, s.box, True)
    return list(finals.values()), list(generations.values())


def zero_recorded_grads(records: Any) -> None:
    """Set the gradient of every array `records` (a tape's) touch to zero."""
    from ..._autodiff import Node

    seen: set[int] = set()
    arrays_seen: set[int] = set()  # (arrays passed again, as a time-indexed state is)

    def zero(g: Any) -> None:
        if type(g) is Array and id(g._buffer) not in seen:
            seen.add(id(g._buffer))
            g._data[...] = 0
            g._buffer.generation += 1

    for rec in records:
        if type(rec) is Node:
            for t in rec.targets:
                zero(t.companion if type(t) is Node else t)
        elif hasattr(rec, "kernel"):
            launcher = rec.launcher
            leaves = launcher.leaves if launcher is not None else None
            if leaves is not None:
                arrays: Any = leaves(rec.args)
            else:
                values: dict[str, Any] = {}
                _flatten(rec.kernel.param_names, rec.args, values)
                arrays = values.items()
            for _, a in arrays:
                if id(a) in arrays_seen:
                    continue
                arrays_seen.add(id(a))
                if type(a) is Array:
                    if a._grad is not None:
                        zero(a._grad)
                elif type(a) is BufferView:
                    zero(a._grad_base)


def zero_grad(*arrays: Any) -> None:
    """Set the gradient of each array to zero (arrays without one are left as they are).

    Example::

        qd.ad.zero_grad(x, v)          # before the next optimisation step's tape
    """
    for a in arrays:
        if type(a) is BufferView:
            base = a._grad_base
            if base is not None:
                base._data[a._offset:a._offset + a._size] = 0
                base._buffer.generation += 1
            continue
        if type(a) is Array:
            g = a._grad
        else:
            raise TypeError(f"zero_grad takes qdarray Arrays or BufferViews; got "
                            f"{type(a).__name__}.")
        if g is not None:
            g._data[...] = 0
            g._buffer.generation += 1


# -- a launch's regions ---------------------------------------------------------------------


@dataclasses.dataclass(slots=True)
class LaunchAccess:
    """The regions one launch reads and writes: one per access of the kernel's summary
    (None: not touched at this launch), by parameter name, and the order of each (read,
    write) pair of accesses within a thread."""

    reads: list[tuple[str, Region | None]]
    writes: list[tuple[str, Region | None]]
    order: list[tuple[int, int, str]]
    read_names: set[str]  # every parameter the kernel reads (NumPy arrays included)
    write_names: set[str]  # every parameter it writes

    unique: bool = False  # no parameter has two read or two written accesses

    def read_regions(self) -> list[Region]:
        """Each read parameter's region (the hull of its accesses' boxes: what `Needs.add`
        would make of them one by one, in one call per parameter instead of one per
        access; a kernel with unrolled loops has hundreds of accesses)."""
        if self.unique:
            return [r for _, r in self.reads if r is not None]
        out: dict[str, Region] = {}
        for name, r in self.reads:
            if r is None:
                continue
            prev = out.get(name)
            if prev is None:
                out[name] = r
            elif prev.box != r.box:
                out[name] = Region(r.array, r.key, hull(prev.box, r.box))
        return list(out.values())

    def written(self) -> list[tuple[str, Region]]:
        """Each written parameter's region (the hull of its accesses' boxes)."""
        if self.unique:
            return [(n, r) for n, r in self.writes if r is not None]
        out: dict[str, Region] = {}
        for name, r in self.writes:
            if r is None:
                continue
            prev = out.get(name)
            out[name] = r if prev is None else Region(r.array, r.key, hull(prev.box, r.box))
        return list(out.items())


def _flatten(names: Any, args: Any, out: dict[str, Any]) -> None:
    for name, a in zip(names, args, strict=True):
        if dataclasses.is_dataclass(a) and not isinstance(a, type):
            fields = dataclasses.fields(a)
            _flatten([f"{name}.{f.name}" for f in fields], [getattr(a, f.name) for f in fields],
                     out)
        else:
            out[name] = a


def launch_access(kernel: Any, args: Any, launcher: Any) -> LaunchAccess:
    """The regions of one launch of `kernel` with `args` (the kernel's access summary
    evaluated; a launcher without one: every array argument read whole and every written
    one written whole, each read before the writes)."""
    access = launcher.access
    if access is None:
        values: dict[str, Any] = {}
        _flatten(kernel.param_names, args, values)
        written = {".".join((kernel.param_names[i], *path)) for i, path in launcher.bumps}
        reads = [(n, region(a)) for n, a in values.items()]
        writes = [(n, region(values[n])) for n in values if n in written]
        order = [(i, j, "rbw") for i in range(len(reads)) for j in range(len(writes))]
        return LaunchAccess(reads, writes, order, set(values), written)
    plan: _Plan | None = launcher.regions
    if plan is None:
        plan = launcher.regions = _Plan(kernel, access)
    return plan(args)


class _Plan:
    """A kernel signature's access summary, ready to evaluate at each launch."""

    def __init__(self, kernel: Any, access: Any) -> None:
        names = tuple(kernel.param_names)
        self.boxes = compile_boxes(access, names, _entry)
        self.reads = [name for name, _ in access["reads"]]
        self.writes = [name for name, _ in access["writes"]]
        self.order = [(r, w, rel) for r, w, rel in access["order"]]
        self.read_names = set(self.reads)
        self.write_names = set(self.writes)
        self.unique = (len(self.read_names) == len(self.reads)
                       and len(self.write_names) == len(self.writes))

    def __call__(self, args: Any) -> LaunchAccess:
        rb, wb = self.boxes(args)
        return LaunchAccess(rb, wb, self.order, self.read_names, self.write_names,
                            self.unique)


def _entry(x: Any, b: Box | None) -> Region | None:
    """The region of box `b` of argument `x` (None: not touched)."""
    if b is None:
        return None
    if type(x) is Array:  # region(x, b), spelled out for the common case
        for lo, z in b:
            if z <= lo:
                return None
        return Region(x, id(x._data), b)
    return region(x, b)


def own_overwrites(kernel: Any, acc: LaunchAccess) -> dict[str, tuple[Box, bool]]:
    """The part of each written parameter's region that the launch itself reads before (or
    after) writing it: name -> (box, read before the write). Raises `AutodiffError` where
    a read and a write of one element come in either order (a serial loop holds both)."""
    out: dict[str, tuple[Box, bool]] = {}
    for i, j, rel in acc.order:
        rname, r = acc.reads[i]
        wname, w = acc.writes[j]
        if r is None or w is None or r.array._buffer is not w.array._buffer:
            continue
        m = meet(w, r)
        if m is None:
            continue
        if rel == "mixed":
            same = "" if rname == wname else f" (through parameter '{rname}')"
            raise AutodiffError(
                f"Kernel '{kernel.__name__}' reads elements of '{wname}'{same} both before "
                "and after writing them (a serial loop reads what an earlier iteration "
                "wrote), so its reverse cannot see what each read saw. Read the old values "
                "from one array and write the new ones to another (x_new[i] = f(x[i])), or "
                "launch the loop's steps one by one.")
        before = rel == "rbw"
        prev = out.get(wname)
        if prev is not None and prev[1] != before:
            raise AutodiffError(
                f"Kernel '{kernel.__name__}' reads some elements of '{wname}' before writing "
                "them and others after, so its reverse cannot see what each read saw. Read "
                "the old values from one array and write the new ones to another.")
        out[wname] = (m if prev is None else hull(prev[0], m), before)
    return out


def _memory(a: Any) -> Any:
    t = type(a)
    return a._buffer if t is Array else a._base._buffer if t is BufferView else None


def refuse_own_overwrites(kernel: Any, args: Any, launcher: Any) -> None:
    """For `kernel.grad(*args)` outside a tape: raise when the last forward launch with these
    arguments' signature overwrote elements its threads had read (`x[i] = f(x[i])`, one array
    for a read and a written parameter), which its reverse would reload with their new
    values. A tape keeps them; a direct call cannot."""
    if launcher is None or launcher.access is None or not launcher.bumps:
        return
    values: dict[str, Any] = {}
    _flatten(kernel.param_names, args, values)
    written = set()
    for index, path in launcher.bumps:
        m = _memory(values.get(".".join((kernel.param_names[index], *path))))
        if m is not None:
            written.add(id(m))
    if not any(id(_memory(values.get(name))) in written for name, _ in launcher.access["reads"]):
        return
    own = own_overwrites(kernel, launch_access(kernel, args, launcher))
    for name, (_, before) in own.items():
        if before:
            raise AutodiffError(
                f"Kernel '{kernel.__name__}' overwrites elements of '{name}' that its threads "
                f"read, and {kernel.__name__}.grad reloads what the forward launch read, so it "
                "would see the new values and the gradients would be wrong. Record the "
                "launch on a qd.ad.Tape, which keeps what it overwrites for the reverse, or "
                "write the results to another array.")


def key_box(shape: tuple[int, ...], key: Any) -> Box:
    """The box `x[key]` writes in an array of `shape`: exact for integers and slices (a
    strided slice gives its hull), the whole array for anything else."""
    whole = tuple((0, n) for n in shape)
    if key is Ellipsis:
        return whole
    items = key if type(key) is tuple else (key,)
    if not all(k is Ellipsis or type(k) is slice or isinstance(k, (int, np.integer))
               for k in items):
        return whole  # index arrays, masks, new axes
    ellipses = [i for i, k in enumerate(items) if k is Ellipsis]
    if len(ellipses) > 1:
        return whole
    if ellipses:
        at = ellipses[0]
        fill = (slice(None),) * (len(shape) - len(items) + 1)
        items = items[:at] + fill + items[at + 1:]
    if len(items) > len(shape):
        return whole
    items = items + (slice(None),) * (len(shape) - len(items))
    out = []
    for k, n in zip(items, shape, strict=True):
        if isinstance(k, (int, np.integer)) and not isinstance(k, (bool, np.bool_)):
            i = int(k) + n if k < 0 else int(k)
            out.append((i, i + 1))
        else:
            start, stop, step = k.indices(n)
            m = len(range(start, stop, step))
            if m == 0:
                out.append((0, 0))
            elif step > 0:
                out.append((start, start + (m - 1) * step + 1))
            else:
                out.append((start + (m - 1) * step, start + 1))
    return tuple(out)
