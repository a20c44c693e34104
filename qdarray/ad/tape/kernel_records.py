"""A recorded kernel launch, and the function that records one, written once per signature.

A tape records each kernel launch as a `Launch`: its arguments, the buffers and generations
of what it read, copies of what it overwrote that a recorded reverse needs (`Snapshot`s),
the memory it wrote (`chain`) and the Python values its compile read. Recording goes through
the same steps at every launch: find the array arguments, mark the tracked ones, evaluate the
kernel's access summary into boxes, copy what the write is about to overwrite of what is
needed, launch, index what the launch read. For one kernel signature these steps are fixed
but for the values, so `make_recorder` writes them once as straight-line Python (one local
per array argument and per access, no loops over parameters, no intermediate region objects)
and the tape calls that function at each launch: the recorded launch then costs a few
microseconds more than the plain one, where the general path (`record_general`) costs
several times the launch.

A signature takes the general path when the generated one would not be simpler: a kernel
without an access summary, a read or written parameter with several accesses (their hulls are
taken per launch), a BufferView or NumPy array argument (their regions and inputs need the
general rules). Validation mode and nested tapes take it too (`Tape.keep`).
"""

from __future__ import annotations

from operator import itemgetter
from typing import Any

import numpy as np

from ..._array import Array
from ..._autodiff import TAPES
from ...buffer_view import BufferView
from ...kernels.args import array_leaves
from ...kernels.regions import compile_boxes
from .snapshots import Region, Snapshot, hull, launch_access, meet, meet_boxes, own_overwrites


class Launch(tuple):  # type: ignore[type-arg]
    """One recorded kernel launch: a tuple (made at every recorded launch, and a tuple is the
    cheapest object Python makes) with its fields by name:

    - kernel, args: what was launched;
    - target: the KernelTarget it ran on (None: its arrays' device);
    - inputs: (name, buffer token, generation, dtype) of each array it read and did not
      write; a NumPy array has no token: (name, the array, a copy of what the launch read,
      dtype);
    - snaps: copies of what it overwrote that recorded reverses need (`Snapshot`s);
    - chain: the memory it wrote: (buffer token, generation before, after, read by the launch
      too);
    - constants: kernel.snapshot_constants() at the launch;
    - launcher: the forward launcher it ran.
    """

    __slots__ = ()

    def __new__(cls, kernel: Any, args: tuple[Any, ...], target: Any,
                inputs: list[tuple[str, Any, Any, Any]], snaps: list[Snapshot] | None = None,
                chain: list[tuple[Any, int, int, bool]] | None = None, constants: Any = None,
                launcher: Any = None) -> Launch:
        return tuple.__new__(cls, (kernel, args, target, inputs, [] if snaps is None else snaps,
                                   [] if chain is None else chain, constants, launcher))

    kernel = property(itemgetter(0))
    args = property(itemgetter(1))
    target = property(itemgetter(2))
    inputs = property(itemgetter(3))
    snaps = property(itemgetter(4))
    chain = property(itemgetter(5))
    constants = property(itemgetter(6))
    launcher = property(itemgetter(7))


def overwritten(layouts: dict[int, Region], a: Array, box: Any) -> Any:
    """The part of box `box` of `a` that meets a needed region of its memory (`layouts`: the
    tape's needed regions of that memory by layout): their hull, None where none meets."""
    key = id(a._data)
    out = None
    for n in layouts.values():
        m = meet_boxes(box, n.box) if n.key == key else meet(Region(a, key, box), n)
        if m is not None:
            out = m if out is None else hull(out, m)
    return out


def discharge(by_memory: dict[Any, dict[int, Region]], buf: Any, a: Array, box: Any
              ) -> None:
    """`Needs.discharge` of box `box` of `a` (memory `buf`)."""
    layouts = by_memory.get(buf)
    key = id(a._data)
    n = layouts.get(key) if layouts else None
    if n is not None and all(p <= c and d <= z for (p, z), (c, d)
                             in zip(box, n.box, strict=True)):
        del layouts[key]  # type: ignore[union-attr]


class Refused(Exception):
    """A read and a write of one element in both orders: `own_overwrites` raises the error."""


def meet_arrays(wa: Array, wbox: Any, ra: Array, rbox: Any) -> Any:
    """`meet` of box `wbox` of `wa` with box `rbox` of `ra` (one memory)."""
    return meet(Region(wa, id(wa._data), wbox), Region(ra, id(ra._data), rbox))


def own_add(own: dict[str, Any] | None, name: str, m: Any, before: bool
            ) -> dict[str, Any]:
    """`own_overwrites`' step for one (read, write) pair that meets in `m`."""
    if own is None:
        return {name: (m, before)}
    prev = own.get(name)
    if prev is None:
        own[name] = (m, before)
    elif prev[1] != before:
        raise Refused
    else:
        own[name] = (hull(prev[0], m), before)
    return own


def add_needed(by_memory: dict[Any, dict[int, Region]], buf: Any, a: Array, box: Any
               ) -> None:
    """`Needs.add` of box `box` of `a` (memory `buf`)."""
    key = id(a._data)
    layouts = by_memory.get(buf)
    if layouts is None:
        by_memory[buf] = {key: Region(a, key, box)}
        return
    old = layouts.get(key)
    if old is None:
        layouts[key] = Region(a, key, box)
    elif old.box != box:
        old.box = hull(old.box, box)


class _Access:
    """The regions of one launch in the form `own_overwrites` reads (its refusals' path)."""

    def __init__(self, reads: Any, writes: Any, order: Any) -> None:
        self.reads, self.writes, self.order = reads, writes, order


def own_boxes(kernel: Any, reads: Any, writes: Any, order: Any) -> dict[str, Any]:
    """`own_overwrites` of a launch whose read and written regions are (name, array, box)."""
    def regions(entries: Any) -> list[tuple[str, Region | None]]:
        return [(n, None if b is None else Region(a, id(a._data), b)) for n, a, b in entries]

    acc: Any = _Access(regions(reads), regions(writes), order)
    return own_overwrites(kernel, acc)


def make_recorder(kernel: Any, args: tuple[Any, ...], launcher: Any) -> Any:
    """The function recording a launch of `kernel` with arguments of this signature on a
    tape, `record(tape, args, target, launcher)`, or None where the general path records
    it."""
    access = launcher.access
    if access is None:
        return None
    leaves = launcher.leaves(args)
    if any(type(a) is not Array for _, a in leaves):
        return None
    leaf_names = [n for n, _ in leaves]
    if any(n not in leaf_names for n, _ in access["reads"] + access["writes"]):
        return None
    return _generate(kernel, tuple(kernel.param_names), access, leaf_names)


def _overlap(a: str, b: str, rank: int) -> str:
    """Python text: whether boxes `a` and `b` (of `rank` axes) share an element."""
    return " and ".join(f"{a}[{k}][0] < {b}[{k}][1] and {b}[{k}][0] < {a}[{k}][1]"
                        for k in range(rank)) or "True"


def _hull(a: str, b: str, rank: int) -> str:
    """Python text: the hull of boxes `a` and `b` (of `rank` axes)."""
    if rank > 3:
        return f"hull({a}, {b})"
    axes = []
    for k in range(rank):
        p, q, r, s = f"{a}[{k}][0]", f"{a}[{k}][1]", f"{b}[{k}][0]", f"{b}[{k}][1]"
        axes.append(f"({p} if {p} < {r} else {r}, {q} if {q} > {s} else {s})")
    return "(" + ", ".join(axes) + ("," if rank == 1 else "") + ")"


class _Source:
    """The text of a recording function, line by line."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def __call__(self, line: str) -> None:
        self.lines.append(line)

    def hulls(self, boxes: list[str], accesses: list[str], out: dict[str, str], prefix: str,
              rank: dict[str, int]) -> None:
        """Locals `out[name]`: each parameter's region, the hull of its accesses' boxes
        (`boxes`, of the parameters `accesses`; None where none is touched)."""
        for name in dict.fromkeys(accesses):
            mine = [b for b, n in zip(boxes, accesses, strict=True) if n == name]
            if len(mine) == 1:
                out[name] = mine[0]
                continue
            v = out[name] = f"{prefix}{len(out)}"
            self(f"    {v} = {mine[0]}")
            for b in mine[1:]:
                self(f"    if {b} is not None: {v} = {b} if {v} is None else "
                     f"{_hull(v, b, rank[name])}")


def _generate(kernel: Any, names: tuple[str, ...], access: Any, leaf_names: list[str]) -> Any:
    kname = kernel.__name__
    rank = {n: len(axes) for n, axes in access["reads"] + access["writes"]}
    read_acc = [name for name, _ in access["reads"]]
    write_acc = [name for name, _ in access["writes"]]
    reads, writes = list(dict.fromkeys(read_acc)), list(dict.fromkeys(write_acc))
    var = {n: f"a{i}" for i, n in enumerate(leaf_names)}
    buf = {n: f"b{i}" for i, n in enumerate(leaf_names)}
    rbox = [f"r{i}" for i in range(len(read_acc))]
    wbox = [f"w{j}" for j in range(len(write_acc))]
    order = [(r, w, rel) for r, w, rel in access["order"]]
    emit = _Source()
    emit("def record(tape, args, target, launcher):")
    for n in leaf_names:
        head, *fields = n.split(".")
        emit(f"    {var[n]} = args[{names.index(head)}]" + "".join(f".{f}" for f in fields))
    emit("    records = tape.records")
    # Tracked arguments: those with a companion, and tape results (given one here). An
    # array with neither a companion nor a node is untracked unless its memory is an
    # orphan's (Tape._target raises then), so only those take the call.
    emit("    tracked = False")
    emit("    orphans = tape.orphans")
    for n in leaf_names:
        v = var[n]
        emit(f"    if {v}._grad is not None: tracked = True")
        emit(f"    elif ({v}._node is not None or orphans) and tape._target({v}, KNAME):")
        emit(f"        tape.materialize({v})")
        emit("        tracked = True")
    every = rbox + wbox
    if every:
        emit(f"    {', '.join(every)}{',' if len(every) == 1 else ''} = boxes(args)")
    for n in dict.fromkeys(reads + writes):
        emit(f"    {buf[n]} = {var[n]}._buffer")
    # What the launch reads of what it writes (x[i] = f(x[i])): `own_overwrites`' rules
    # pair by pair (name -> (box, read before the write)); a pair it refuses (an order in
    # both directions) goes to `own_overwrites` itself, which raises its error.
    if order:
        emit("    own = None")
        emit("    try:")
        for i, j, rel in order:
            r, w = read_acc[i], write_acc[j]
            # one parameter read and written: one layout, so the boxes compare directly
            m = (f"meet_boxes({wbox[j]}, {rbox[i]})" if r == w else
                 f"meet_arrays({var[w]}, {wbox[j]}, {var[r]}, {rbox[i]})")
            # (the same parameter: boxes that do not overlap, the usual case of a time-indexed
            # step, are told apart inline, without the call)
            same = (_overlap(wbox[j], rbox[i], rank[w]) if r == w else
                    f"{buf[r]} is {buf[w]}")
            emit(f"        if {rbox[i]} is not None and {wbox[j]} is not None and ({same}):")
            emit(f"            m = {m}")
            emit("            if m is not None:")
            emit("                raise Refused" if rel == "mixed" else
                 f"                own = own_add(own, {w!r}, m, {rel == 'rbw'})")
        emit("    except Refused:")
        r_list = ", ".join(f"({n!r}, {var[n]}, {b})" for n, b in zip(read_acc, rbox,
                                                                   strict=True))
        w_list = ", ".join(f"({n!r}, {var[n]}, {b})" for n, b in zip(write_acc, wbox,
                                                                   strict=True))
        emit(f"        own = own_boxes(kernel, [{r_list}], [{w_list}], ORDER)")
    region_r: dict[str, str] = {}
    region_w: dict[str, str] = {}
    emit.hulls(rbox, read_acc, region_r, "R", rank)
    emit.hulls(wbox, write_acc, region_w, "W", rank)
    # Copies of what the write is about to overwrite of what recorded reverses need.
    emit("    snaps = []")
    if writes:
        emit("    if tape.indexed != len(records): tape.index_needs()")
        emit("    by_memory = tape.needs.by_memory")
        for n in writes:
            w, v, b = region_w[n], var[n], buf[n]
            emit(f"    if {w} is not None:")
            emit(f"        layouts = by_memory.get({b})")
            emit("        o = None")
            emit("        if layouts:")
            # the exact part only where a needed region of this layout meets the write
            # (or one of another layout of the memory may)
            emit(f"            k = id({v}._data)")
            emit("            for nd in layouts.values():")
            emit("                nb = nd.box")
            emit(f"                if nd.key != k or ({_overlap(w, 'nb', rank[n])}):")
            emit(f"                    o = overwritten(layouts, {v}, {w})")
            emit("                    break")
            emit("        before = True")
            if order:
                emit(f"        if own is not None and {n!r} in own:")
                emit(f"            own_box, before = own[{n!r}]")
                emit("            if before: o = own_box if o is None else hull(o, own_box)")
            emit("        if o is not None:")
            emit(f"            snaps.append(tape._take({v}, o, before, KDESC))")
            emit(f"            discharge(by_memory, {b}, {v}, {w})")
        # The memory each write moves to a new generation (each memory once).
        for j, n in enumerate(writes):
            b = buf[n]
            earlier = [f"{buf[writes[k]]} is not {b}" for k in range(j)]
            cond = " and ".join([f"{region_w[n]} is not None", *earlier])
            emit(f"    g{j} = {b}.generation if {cond} else None")
    emit("    launcher(args)")
    inputs = [n for n in leaf_names if n in reads and n not in writes]
    emit("    inputs = [" + ", ".join(
        f"({n!r}, {buf[n]}, {buf[n]}.generation, {var[n]}._dtype)" for n in inputs) + "]")
    if writes:
        emit("    writers = tape.writers")
    for n in writes:
        v, b = var[n], buf[n]
        emit(f"    writers[{b}] = kernel")
        emit(f"    if tracked and {v}._grad is None and {v}._dtype.kind in 'fc':")
        emit(f"        tape._give_companion(kernel, {n!r}, {v})")
    emit("    chain = []")
    for j, n in enumerate(writes):
        b = buf[n]
        read_too = " or ".join(f"({region_r[m]} is not None and {buf[m]} is {b})"
                               for m in reads) or "False"
        emit(f"    if g{j} is not None: chain.append(({b}, g{j}, {b}.generation, "
             f"{read_too}))")
    # A launch record keeps no namespace values: the needed regions stay indexed (below).
    emit("    indexed = tape.indexed == len(records)")
    emit("    records.append(_new(Launch, (kernel, args, target, inputs, snaps, chain, "
         "kernel.snapshot_constants() if kernel._guards else None, launcher)))")
    emit("    if indexed: tape.indexed = len(records)")
    if reads:
        emit("    by_memory = tape.needs.by_memory")
    for n in reads:
        r, v, b = region_r[n], var[n], buf[n]
        emit(f"    if {r} is not None:")
        emit(f"        layouts = by_memory.get({b})")
        emit(f"        nd = layouts.get(id({v}._data)) if layouts else None")
        emit(f"        if nd is None: add_needed(by_memory, {b}, {v}, {r})")
        emit("        else:")
        emit("            ob = nd.box")
        emit(f"            nd.box = {_hull('ob', r, rank[n])}")
    src = "\n".join(emit.lines) + "\n"
    namespace: dict[str, Any] = {
        "KNAME": kname, "KDESC": f"kernel '{kname}'", "ORDER": order, "Launch": Launch,
        "_new": tuple.__new__, "overwritten": overwritten, "add_needed": add_needed,
        "discharge": discharge,
        "own_boxes": own_boxes, "hull": hull, "kernel": kernel,
        "meet_boxes": meet_boxes, "meet_arrays": meet_arrays, "own_add": own_add,
        "Refused": Refused,
        "boxes": compile_boxes(access, names, flat=True) if every else None,
    }
    exec(compile(src, f"<qdarray recorder of {kname}>", "exec"), namespace)  # noqa: S102
    record = namespace["record"]
    record.source = src
    return record


def record_general(tape: Any, kernel: Any, args: tuple[Any, ...], target: Any,
                   launcher: Any) -> None:
    """Record a launch on `tape` and run it, for any signature: the steps `make_recorder`
    writes out, taken one by one (and, in validation mode, the launch checked first)."""
    if tape.validation:
        from .validate import check_launch

        check_launch(kernel, args)
    leaves = launcher.leaves
    if leaves is None:
        leaves = launcher.leaves = array_leaves(kernel.param_names, args)
    arrays = leaves(args)
    if len(TAPES) > 1:
        tape.nested(f"kernel '{kernel.__name__}'",
                    [a for _, a in arrays if type(a) is not np.ndarray])
    tracked = False
    for _, a in arrays:
        t = type(a)
        if t is Array:
            if a._grad is None:
                if tape._target(a, kernel.__name__):
                    tape.materialize(a)
                else:
                    continue
            tracked = True
        elif t is BufferView and a._grad_base is not None:
            tracked = True
    acc = launch_access(kernel, args, launcher)
    written_regions = acc.written()
    snaps = launch_snapshots(tape, kernel, acc, written_regions) if written_regions else []
    chain: list[tuple[Any, int]] = []
    for _, r in written_regions:
        buf = r.array._buffer
        if all(c[0] is not buf for c in chain):
            chain.append((buf, buf.generation))
    launcher(args)
    read, written = acc.read_names, acc.write_names
    inputs: list[tuple[str, Any, Any, Any]] = []
    for name, a in arrays:
        t = type(a)
        if t is np.ndarray:
            if name not in written and name in read:
                # NumPy arrays count no writes: what the launch read is kept to compare.
                inputs.append((name, a, a.copy(), a.dtype))
            continue
        arr = a._base if t is BufferView else a
        buf = arr._buffer
        if name not in written:
            if name in read:
                inputs.append((name, buf, buf.generation, arr._dtype))
            continue
        tape.writers[buf] = kernel
        if tracked and arr._dtype.kind in "fc" and (
                a._grad_base if t is BufferView else a._grad) is None:
            tape._give_companion(kernel, name, a)
    reads = acc.read_regions()
    rec = Launch(kernel, args, target, inputs, snaps,
                 [(buf, g0, buf.generation, any(r.array._buffer is buf for r in reads))
                  for buf, g0 in chain], kernel.snapshot_constants(), launcher)
    needs = tape.needs
    for r in reads:
        needs.add(r)
    tape.records.append(rec)


def launch_snapshots(tape: Any, kernel: Any, acc: Any, written: Any) -> list[Snapshot]:
    """Copies of what a launch with regions `acc` (`written`: its written regions) is
    about to overwrite of what recorded reverses need, and of what it overwrites of what
    it read itself."""
    own = own_overwrites(kernel, acc)
    if not written:
        return []
    tape.index_needs()
    snaps = []
    for name, w in written:
        b = tape.needs.overwritten(w)
        before = True
        if name in own:
            own_box, before = own[name]
            if before:
                b = own_box if b is None else hull(b, own_box)
        if b is not None:
            snaps.append(tape._take(w.array, b, before, f"kernel '{kernel.__name__}'"))
            tape.needs.discharge(w)
    return snaps
