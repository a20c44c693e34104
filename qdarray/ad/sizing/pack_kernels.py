"""The IR kernels that pack a launch's adstacks (`ad/sizing/packed_layout.py`), built here and
compiled by the kernel compiler like any kernel, so they run on the device of the arrays.

All values are int64 element counts. Sums saturate at `BIG` (2**61): a total that reaches it
is more than any heap holds, and the host refuses it instead of letting a sum wrap around.

- `fill`: out[t] = value (every thread the same capacity);
- `chunk_sums`, `serial_scan`, `distribute`: an exclusive prefix sum of `n` elements as
  `n + 1` elements (the last is the total), in rounds: sums of chunks, a scan of the sums,
  then each chunk's elements from its chunk's start;
- `groups`: per group of G consecutive threads, the sum of their capacities, each thread's
  rank (largest capacity first, lower thread first among equals; 8 bits each), how many of
  its threads keep their deepest entries contiguous (M) and the length of its table row;
- `rows`: per group, its table row (ad/transform/adstack.py): M, where each depth below the (M+1)-th
  largest capacity starts, where the M deepest threads' own entries start, and the end;
- `add`, `work`, `histogram`, `scatter`, `gather`, `pairs`: the reordering of threads by
  capacity (ad/transform/reorder.py): a key per thread, the iterations each group runs (its count x
  its largest key) beside the sum of its keys, a stable counting sort of the keys (largest
  first) within each chunk, which owns a row of the histogram, the permuted capacities,
  and the order stored two thread numbers to an int64.
"""

from __future__ import annotations

from ...kernels.emit import KernelBuilder
from ...kernels.ir import KernelIR, Op, Value, Var
from ...kernels.types import ArrayType
from ..transform.adstack import POS_BITS

BIG = 1 << 61
PER_WORD = 64 // POS_BITS  # thread ranks per int64 of the rows array


class _Kernel(KernelBuilder):
    """Emission helpers for one int64 kernel."""

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def array(self, name: str) -> Value:
        return self.param(name, ArrayType(self.i64, 1))

    def load(self, mem: Value, at: Value) -> Value:
        return self.op(Op.LOAD, mem, at)

    def store(self, mem: Value, at: Value, value: Value) -> None:
        self.em.emit(Op.STORE, mem, at, value)

    def var(self, name: str, start: Value) -> Var:
        return self.local(name, self.i64, start)

    def get(self, v: Var) -> Value:
        return self.em.load_var(v)

    def set(self, v: Var, value: Value) -> None:
        self.em.store_var(v, value)

    def add_sat(self, a: Value, b: Value) -> Value:
        """min(a + b, BIG) for a in [0, BIG] and b >= 0."""
        big = self.c(BIG)
        return self.op(Op.MIN, self.op(Op.ADD, a, self.op(Op.MIN, b, big)), big)

    def kernel(self) -> KernelIR:
        return self.ir(self.name)


def fill() -> KernelIR:
    k = _Kernel("adstack_fill")
    out, n, value = k.array("out"), k.param("n", k.i64), k.param("value", k.i64)
    k.loop(k.c(0), n, lambda t: k.store(out, t, value), parallel=True)
    return k.kernel()


def _chunk(k: _Kernel, c: Value, chunk: Value, n: Value) -> tuple[Value, Value]:
    lo = k.op(Op.MUL, c, chunk)
    return lo, k.op(Op.MIN, k.op(Op.ADD, lo, chunk), n)


def chunk_sums() -> KernelIR:
    """dst[c] = the (saturated) sum of src[src_at + c*chunk ...] over chunk c."""
    k = _Kernel("adstack_chunk_sums")
    src, src_at, n = k.array("src"), k.param("src_at", k.i64), k.param("n", k.i64)
    chunk, nc, dst = k.param("chunk", k.i64), k.param("nc", k.i64), k.array("dst")

    def each(c: Value) -> None:
        lo, hi = _chunk(k, c, chunk, n)
        s = k.var("s", k.c(0))
        k.loop(lo, hi, lambda i: k.set(s, k.add_sat(k.get(s), k.load(src, k.op(
            Op.ADD, src_at, i)))))
        k.store(dst, c, k.get(s))
    k.loop(k.c(0), nc, each, parallel=True)
    return k.kernel()


def serial_scan() -> KernelIR:
    """dst[dst_at + i] = add + the sum of src[src_at:src_at + i] for i in [0, n], on one
    thread; totals[tk] = the total."""
    k = _Kernel("adstack_serial_scan")
    src, src_at, n = k.array("src"), k.param("src_at", k.i64), k.param("n", k.i64)
    dst, dst_at, add = k.array("dst"), k.param("dst_at", k.i64), k.param("add", k.i64)
    totals, tk = k.array("totals"), k.param("tk", k.i64)
    run = k.var("run", k.c(0))

    def each(i: Value) -> None:
        v = k.load(src, k.op(Op.ADD, src_at, i))
        k.store(dst, k.op(Op.ADD, dst_at, i), k.op(Op.ADD, add, k.get(run)))
        k.set(run, k.add_sat(k.get(run), v))
    k.loop(k.c(0), n, each)
    k.store(dst, k.op(Op.ADD, dst_at, n), k.op(Op.ADD, add, k.get(run)))
    k.store(totals, tk, k.get(run))
    return k.kernel()


def distribute() -> KernelIR:
    """The exclusive scan of src from offs, the exclusive scan of its chunk sums (nc + 1
    elements): dst[dst_at + i] = add + offs[c] + the sum of chunk c's elements before i."""
    k = _Kernel("adstack_distribute")
    src, src_at, n = k.array("src"), k.param("src_at", k.i64), k.param("n", k.i64)
    chunk, nc, offs = k.param("chunk", k.i64), k.param("nc", k.i64), k.array("offs")
    dst, dst_at, add = k.array("dst"), k.param("dst_at", k.i64), k.param("add", k.i64)

    def each(c: Value) -> None:
        lo, hi = _chunk(k, c, chunk, n)
        run = k.var("run", k.load(offs, c))

        def element(i: Value) -> None:
            k.store(dst, k.op(Op.ADD, dst_at, i), k.op(Op.ADD, add, k.get(run)))
            k.set(run, k.add_sat(k.get(run), k.load(src, k.op(Op.ADD, src_at, i))))
        k.loop(lo, hi, element)
        last = k.op(Op.EQ, c, k.op(Op.SUB, nc, k.c(1)))
        k.when(last, lambda: k.store(dst, k.op(Op.ADD, dst_at, n),
                                     k.op(Op.ADD, add, k.load(offs, nc))))
    k.loop(k.c(0), nc, each, parallel=True)
    return k.kernel()


def _lanes(k: _Kernel, g: Value, group: Value, n: Value, caps_at: Value
           ) -> tuple[Value, Value, Value]:
    """(where group g's capacities start in caps, its first thread, its thread count)."""
    first = k.op(Op.MUL, g, group)
    return (k.op(Op.ADD, caps_at, first), first,
            k.op(Op.MIN, group, k.op(Op.SUB, n, first)))


def _rank(k: _Kernel, rows: Value, pws: Value, thread: Value) -> Value:
    """A thread's rank, from the words `groups` wrote."""
    per = k.c(PER_WORD)
    word = k.load(rows, k.op(Op.ADD, pws, k.op(Op.FLOORDIV, thread, per)))
    shift = k.op(Op.MUL, k.op(Op.MOD, thread, per), k.c(POS_BITS))
    return k.op(Op.BIT_AND, k.op(Op.SHR, word, shift), k.c((1 << POS_BITS) - 1))


def groups() -> KernelIR:
    """Per group g: its capacities' sum `sizes[g]`, its threads' ranks (in the rows array at
    `pws`), the number of threads with tails `ms[g]` = M and its row's length `rowlen[g]`
    = lim + M + 2, where lim is the (M+1)-th largest capacity: the smallest M >= 1 whose row
    costs at most 1/8 of the group's entries in bytes (`itemsize` each), or else the M
    whose row is shortest."""
    k = _Kernel("adstack_groups")
    caps, caps_at = k.array("caps"), k.param("caps_at", k.i64)
    n, group = k.param("n", k.i64), k.param("group", k.i64)
    ng, itemsize = k.param("ng", k.i64), k.param("itemsize", k.i64)
    sizes, rowlen, ms = k.array("sizes"), k.array("rowlen"), k.array("ms")
    rows, pws = k.array("rows"), k.param("pws", k.i64)
    zero, one = k.c(0), k.c(1)

    def each(g: Value) -> None:
        lo, first, cnt = _lanes(k, g, group, n, caps_at)
        s = k.var("s", zero)
        k.loop(zero, cnt, lambda j: k.set(s, k.add_sat(k.get(s), k.load(
            caps, k.op(Op.ADD, lo, j)))))
        k.store(sizes, g, k.get(s))
        words = k.op(Op.FLOORDIV, group, k.c(PER_WORD))

        def word(w: Value) -> None:
            bits = k.var("bits", zero)

            def slot(b: Value) -> None:
                j = k.op(Op.ADD, k.op(Op.MUL, w, k.c(PER_WORD)), b)

                def ranked() -> None:
                    c = k.load(caps, k.op(Op.ADD, lo, j))
                    rank = k.var("rank", zero)

                    def other(j2: Value) -> None:
                        c2 = k.load(caps, k.op(Op.ADD, lo, j2))
                        ahead = k.op(Op.BIT_OR, k.op(Op.GT, c2, c), k.op(
                            Op.BIT_AND, k.op(Op.EQ, c2, c), k.op(Op.LT, j2, j)))
                        k.set(rank, k.op(Op.ADD, k.get(rank),
                                         k.em.emit(Op.SELECT, ahead, one, zero)))
                    k.loop(zero, cnt, other)
                    shift = k.op(Op.MUL, b, k.c(POS_BITS))
                    k.set(bits, k.op(Op.BIT_OR, k.get(bits), k.op(Op.SHL, k.get(rank), shift)))
                k.when(k.op(Op.LT, j, cnt), ranked)
            k.loop(zero, k.c(PER_WORD), slot)
            k.store(rows, k.op(Op.ADD, k.op(Op.ADD, pws, k.op(Op.MUL, g, words)), w),
                    k.get(bits))
        k.loop(zero, words, word)
        budget = k.op(Op.MUL, k.op(Op.FLOORDIV, k.get(s), k.c(64)), itemsize)
        chosen = k.var("chosen", zero)
        best, best_cost = k.var("best", one), k.var("best_cost", k.c(BIG))

        def candidate(m: Value) -> None:
            lim = k.var("lim", zero)   # the capacity ranked m (0 past the last thread)
            k.loop(zero, cnt, lambda j: k.when(
                k.op(Op.EQ, _rank(k, rows, pws, k.op(Op.ADD, first, j)), m),
                lambda: k.set(lim, k.op(Op.MIN, k.load(caps, k.op(Op.ADD, lo, j)),
                                        k.c(BIG)))))
            cost = k.op(Op.ADD, k.get(lim), k.op(Op.ADD, m, k.c(2)))
            fresh = k.op(Op.EQ, k.get(chosen), zero)
            fits = k.op(Op.BIT_AND, fresh, k.op(Op.LE, cost, budget))
            shorter = k.op(Op.BIT_AND, fresh, k.op(Op.LT, cost, k.get(best_cost)))
            take = k.op(Op.BIT_OR, fits, shorter)
            k.set(best, k.em.emit(Op.SELECT, take, m, k.get(best)))
            k.set(best_cost, k.em.emit(Op.SELECT, take, cost, k.get(best_cost)))
            k.set(chosen, k.em.emit(Op.SELECT, fits, one, k.get(chosen)))
        k.loop(one, k.op(Op.ADD, k.op(Op.MAX, cnt, one), one), candidate)
        k.store(ms, g, k.get(best))
        k.store(rowlen, g, k.get(best_cost))
    k.loop(zero, ng, each, parallel=True)
    return k.kernel()


def rows() -> KernelIR:
    """Per group g its table row at table[tab + starts[rws + g] ...]:
    [M, T(0), ..., T(lim - 1), S_0, ..., S_(M-1), end], where T(d) is where depth d's entries
    start (the group's start plus the sum over its threads of min(capacity, d)), S_p where
    the thread ranked p keeps its entries from depth lim on (after those of the threads
    ranked before it), and end the group's end."""
    k = _Kernel("adstack_rows")
    caps, caps_at = k.array("caps"), k.param("caps_at", k.i64)
    n, group = k.param("n", k.i64), k.param("group", k.i64)
    ng, gbase, ms = k.param("ng", k.i64), k.array("gbase"), k.array("ms")
    starts, rws, pws = k.array("starts"), k.param("rws", k.i64), k.param("pws", k.i64)
    table, tab, region = k.array("table"), k.param("tab", k.i64), k.param("region", k.i64)
    zero, one = k.c(0), k.c(1)

    def each(g: Value) -> None:
        lo, first, cnt = _lanes(k, g, group, n, caps_at)
        r0 = k.load(starts, k.op(Op.ADD, rws, g))
        r1 = k.load(starts, k.op(Op.ADD, k.op(Op.ADD, rws, g), one))
        m = k.load(ms, g)
        lim = k.op(Op.SUB, k.op(Op.SUB, k.op(Op.SUB, r1, r0), m), k.c(2))
        base = k.op(Op.ADD, region, k.load(gbase, g))
        at = k.op(Op.ADD, tab, r0)
        k.store(table, at, m)
        row = k.op(Op.ADD, at, one)

        def below(d: Value) -> Value:
            s = k.var("s", zero)
            k.loop(zero, cnt, lambda j: k.set(s, k.op(Op.ADD, k.get(s), k.op(
                Op.MIN, k.load(caps, k.op(Op.ADD, lo, j)), d))))
            return k.op(Op.ADD, base, k.get(s))
        k.loop(zero, lim, lambda d: k.store(table, k.op(Op.ADD, row, d), below(d)))
        tails = below(lim)

        def tail(p: Value) -> None:
            s = k.var("s", tails)

            def before(j: Value) -> None:
                over = k.op(Op.MAX, k.op(Op.SUB, k.load(caps, k.op(Op.ADD, lo, j)), lim), zero)
                ahead = k.op(Op.LT, _rank(k, starts, pws, k.op(Op.ADD, first, j)), p)
                k.set(s, k.op(Op.ADD, k.get(s), k.em.emit(Op.SELECT, ahead, over, zero)))
            k.loop(zero, cnt, before)
            k.store(table, k.op(Op.ADD, k.op(Op.ADD, row, lim), p), k.get(s))
        k.loop(zero, m, tail)
        k.store(table, k.op(Op.ADD, k.op(Op.ADD, row, lim), m),
                k.op(Op.ADD, region, k.load(gbase, k.op(Op.ADD, g, one))))
    k.loop(zero, ng, each, parallel=True)
    return k.kernel()


# -- reordering (ad/transform/reorder.py) -----------------------------------------------------


def add() -> KernelIR:
    """dst[t] = dst[t] + src[src_at + t] (saturated), for t in [0, n)."""
    k = _Kernel("adstack_add")
    dst, src, src_at, n = (k.array("dst"), k.array("src"), k.param("src_at", k.i64),
                           k.param("n", k.i64))
    k.loop(k.c(0), n, lambda t: k.store(dst, t, k.add_sat(k.load(dst, t), k.load(
        src, k.op(Op.ADD, src_at, t)))), parallel=True)
    return k.kernel()


def work() -> KernelIR:
    """Per group g of G consecutive keys: work[g] = its thread count x its largest key (the
    iterations its threads run side by side), sums[g] = the sum of its keys (saturated)."""
    k = _Kernel("adstack_work")
    key, n, group = k.array("key"), k.param("n", k.i64), k.param("group", k.i64)
    ng, work_, sums = k.param("ng", k.i64), k.array("work"), k.array("sums")
    zero = k.c(0)

    def each(g: Value) -> None:
        lo, _, cnt = _lanes(k, g, group, n, zero)
        s, m = k.var("s", zero), k.var("m", zero)

        def lane(j: Value) -> None:
            v = k.load(key, k.op(Op.ADD, lo, j))
            k.set(s, k.add_sat(k.get(s), v))
            k.set(m, k.op(Op.MAX, k.get(m), v))
        k.loop(zero, cnt, lane)
        k.store(sums, g, k.get(s))
        big = k.c(BIG)
        k.store(work_, g, k.op(Op.MIN, k.op(Op.MUL, k.op(Op.MIN, k.get(m), k.op(
            Op.FLOORDIV, big, k.op(Op.MAX, cnt, k.c(1)))), cnt), big))
    k.loop(zero, ng, each, parallel=True)
    return k.kernel()


def _bin(k: _Kernel, key: Value, t: Value, shift: Value, bins: Value) -> Value:
    """The bin of key[t], largest keys first: bins - 1 - min(key >> shift, bins - 1)."""
    last = k.op(Op.SUB, bins, k.c(1))
    return k.op(Op.SUB, last, k.op(Op.MIN, k.op(Op.SHR, k.load(key, t), shift), last))


def histogram() -> KernelIR:
    """Per chunk c of keys: hist[c * bins + b] = how many of its keys fall in bin b (`hist`
    zero before; each chunk owns its row, so no atomics and a fixed result)."""
    k = _Kernel("adstack_histogram")
    key, n, chunk, nc = (k.array("key"), k.param("n", k.i64), k.param("chunk", k.i64),
                         k.param("nc", k.i64))
    shift, bins, hist = k.param("shift", k.i64), k.param("bins", k.i64), k.array("hist")

    def each(c: Value) -> None:
        lo, hi = _chunk(k, c, chunk, n)

        def element(t: Value) -> None:
            at = k.op(Op.ADD, k.op(Op.MUL, c, bins), _bin(k, key, t, shift, bins))
            k.store(hist, at, k.op(Op.ADD, k.load(hist, at), k.c(1)))
        k.loop(lo, hi, element)
    k.loop(k.c(0), nc, each, parallel=True)
    return k.kernel()


def scatter() -> KernelIR:
    """The counting sort's last step: per chunk c, each of its keys t in order goes to
    order[offs[c * bins + b]] (b its bin), which then moves on by one (`offs`: the
    exclusive scan of `histogram`'s counts, chunk after chunk): each chunk sorted in its
    own place, stable, largest bins first."""
    k = _Kernel("adstack_scatter")
    key, n, chunk, nc = (k.array("key"), k.param("n", k.i64), k.param("chunk", k.i64),
                         k.param("nc", k.i64))
    shift, bins, offs = k.param("shift", k.i64), k.param("bins", k.i64), k.array("offs")
    order = k.array("order")

    def each(c: Value) -> None:
        lo, hi = _chunk(k, c, chunk, n)

        def element(t: Value) -> None:
            at = k.op(Op.ADD, k.op(Op.MUL, c, bins), _bin(k, key, t, shift, bins))
            p = k.load(offs, at)
            k.store(order, p, t)
            k.store(offs, at, k.op(Op.ADD, p, k.c(1)))
        k.loop(lo, hi, element)
    k.loop(k.c(0), nc, each, parallel=True)
    return k.kernel()


def gather() -> KernelIR:
    """dst[dst_at + t] = src[src_at + order[t]], for t in [0, n)."""
    k = _Kernel("adstack_gather")
    src, src_at, order = k.array("src"), k.param("src_at", k.i64), k.array("order")
    n, dst, dst_at = k.param("n", k.i64), k.array("dst"), k.param("dst_at", k.i64)
    k.loop(k.c(0), n, lambda t: k.store(dst, k.op(Op.ADD, dst_at, t), k.load(
        src, k.op(Op.ADD, src_at, k.load(order, t)))), parallel=True)
    return k.kernel()


def pairs() -> KernelIR:
    """dst[dst_at + w] = src[2w] | src[2w + 1] << 32 for w in [0, ceil(n / 2)) (values
    below 2**31; 0 past the end): two thread numbers per int64."""
    k = _Kernel("adstack_pairs")
    src, n, dst, dst_at = (k.array("src"), k.param("n", k.i64), k.array("dst"),
                           k.param("dst_at", k.i64))
    one, two = k.c(1), k.c(2)

    def each(w: Value) -> None:
        lo = k.load(src, k.op(Op.MUL, w, two))
        at = k.op(Op.ADD, k.op(Op.MUL, w, two), one)
        hi = k.load(src, k.op(Op.MIN, at, k.op(Op.SUB, n, one)))
        hi = k.em.emit(Op.SELECT, k.op(Op.LT, at, n), hi, k.c(0))
        k.store(dst, k.op(Op.ADD, dst_at, w), k.op(Op.BIT_OR, lo, k.op(Op.SHL, hi, k.c(32))))
    k.loop(k.c(0), k.op(Op.FLOORDIV, k.op(Op.ADD, n, one), two), each, parallel=True)
    return k.kernel()


BUILDERS = {"fill": fill, "chunk_sums": chunk_sums, "serial_scan": serial_scan,
            "distribute": distribute, "groups": groups, "rows": rows, "add": add,
            "work": work, "histogram": histogram, "scatter": scatter, "gather": gather,
            "pairs": pairs}
