"""uniformity: which values of a parallel loop body differ between threads that run in SIMD
lanes, and whether lanes can run the body with the scalar code's results.

The numba CPU generator runs a parallel loop's threads in groups of consecutive threads, one
thread per lane of a vector (codegen/numba/lanes.py). `uniformity(body, threads, ...)`
classifies what the body computes:

- a value is UNIFORM when every lane of a group has the same one (constants, shapes, values
  from outside the body, pure ops of uniform values, loads at uniform indices, the index of a
  loop inside the body: lanes run inner loops in lockstep), LINEAR when lane k has the first
  lane's value + k (the thread index along the innermost axis, plus or minus uniform
  integers: contiguous memory), VARYING otherwise;
- a local is varying when it is stored a non-uniform value or under varying control
  (reverse kernels' adstack depths are such locals: each lane pushes and pops its own),
  except the `group` locals, which a group keeps one value of (adstack depths that its
  lanes share: passes/lane_stacks.py);
- control is varying inside an `if` on a varying condition and inside a *masked* loop: one
  whose bounds or condition vary, or that a `break` or `continue` under varying control
  leaves. A masked loop runs until no lane is left in it, each lane under its own mask.
- a masked `for` loop without exits of its own that pops adstacks (reads an array of
  `runs`, the heaps, or sets `depths` without pushing) is *end-aligned*: its lanes end
  together, so a lane with fewer iterations starts later (each lane still runs its own
  iterations in order). The reverse of a loop pops its stacks so: lanes that pushed at one
  depth in the forward's lockstep order (start-aligned) pop at one depth too, one
  contiguous run of entries. Its index is varying (each lane at its own iteration).

`blockers` lists why lanes could not give results bit-identical to the scalar code (the
renderer then keeps the scalar code for the loop): atomics whose order of operations the
lockstep order would change (float updates, or updates whose old value is used, inside an
inner loop or aimed at an array by more than one site), and varying values of types that
have no SIMD lanes (complex numbers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import Enum

from ..ir import Block, Break, Continue, For, If, Instr, Op, Stmt, Value, While
from ..ops import OPS


class Kind(Enum):
    UNIFORM = 0
    LINEAR = 1
    VARYING = 2


U, L, V = Kind.UNIFORM, Kind.LINEAR, Kind.VARYING
_ATOMICS = frozenset({Op.ATOMIC_ADD, Op.ATOMIC_MIN, Op.ATOMIC_MAX})
_WRITES = _ATOMICS | {Op.STORE}


@dataclass
class Uniformity:
    """The result of `uniformity` (module docstring). Values and locals not listed are
    uniform; loops are named by `id()` of their node."""

    kinds: dict[int, Kind] = field(default_factory=dict)
    varying_vars: set[int] = field(default_factory=set)
    masked_loops: set[int] = field(default_factory=set)
    end_aligned: set[int] = field(default_factory=set)
    blockers: list[str] = field(default_factory=list)

    def kind(self, v: Value) -> Kind:
        return self.kinds.get(v.id, U)

    def uniform(self, v: Value) -> bool:
        return v.id not in self.kinds


def _kind(v: Value) -> str:
    return str(getattr(v.type, "kind", ""))


def _is_int(v: Value) -> bool:
    return _kind(v) in ("i", "u")


def _result_kind(i: Instr, kinds: list[Kind]) -> Kind:
    if all(k is U for k in kinds):
        return U if (OPS[i.op].pure or i.op is Op.LOAD) else V
    r = i.result
    assert r is not None
    if i.op in (Op.ADD, Op.SUB) and _is_int(r) and kinds[1] is U and kinds[0] is L:
        return L
    if i.op is Op.SUB and _is_int(r) and kinds == [L, L]:
        return U  # (a + k) - (b + k), wrapping or not
    if i.op is Op.ADD and _is_int(r) and kinds == [U, L]:
        return L
    if i.op is Op.CAST and kinds[0] is L and _is_int(r) and _is_int(i.args[0]):
        # widening (or same-width) casts keep consecutive values consecutive
        if r.type.itemsize >= i.args[0].type.itemsize:  # type: ignore[union-attr]
            return L
    return V


class _Walk:
    def __init__(self, linear: set[int], varying_vars: set[int], runs: set[int],
                 group: set[int], depths: set[int]) -> None:
        self.kinds: dict[int, Kind] = {v: L for v in linear}
        self.varying_vars = set(varying_vars)
        self.runs = runs
        self.group = group
        self.depths = depths
        self.masked: set[int] = set()
        self.aligned: set[int] = set()
        self.complex: list[Instr] = []

    def kind(self, v: Value) -> Kind:
        return self.kinds.get(v.id, U)

    def block(self, b: Block, varying: bool) -> None:
        for s in b.stmts:
            self.stmt(s, varying)

    def stmt(self, s: Stmt, varying: bool) -> None:
        if isinstance(s, Instr):
            self.instr(s, varying)
        elif isinstance(s, If):
            inner = varying or self.kind(s.cond) is not U
            self.block(s.then_body, inner)
            self.block(s.else_body, inner)
        elif isinstance(s, For):
            masked = self.kind(s.begin) is not U or self.kind(s.end) is not U
            if masked and self.runs and _pops(s.body, self.runs, self.depths) \
                    and not _exits(s.body):
                self.aligned.add(id(s))
                self.kinds[s.index.id] = V
            self.loop(s, masked, varying)
        elif isinstance(s, While):
            self.block(s.cond_body, varying)
            self.loop(s, self.kind(s.cond) is not U, varying)

    def loop(self, s: For | While, masked: bool, varying: bool) -> None:
        """Visit a loop's regions; a loop whose exits vary (which the visit finds out) is
        masked, and visited again so."""
        self.block(s.body, varying or masked)
        if not masked and self.exits_vary(s.body):
            masked = True
            self.block(s.body, True)
        if masked:
            self.masked.add(id(s))
            if isinstance(s, While):
                self.block(s.cond_body, True)

    def exits_vary(self, body: Block) -> bool:
        """Whether a break or continue of this loop (not of an inner one) may be taken by
        some lanes of a group and not others."""
        def scan(b: Block, varying: bool) -> bool:
            for s in b.stmts:
                if isinstance(s, (Break, Continue)) and varying:
                    return True
                if isinstance(s, If):
                    inner = varying or self.kind(s.cond) is not U
                    if scan(s.then_body, inner) or scan(s.else_body, inner):
                        return True
            return False
        return scan(body, False)

    def instr(self, i: Instr, varying: bool) -> None:
        if i.op is Op.STORE_VAR:
            var = i.attrs[0]
            if self.kind(i.args[0]) is not U or (varying and var.id not in self.group):
                self.varying_vars.add(var.id)
                if str(getattr(var.dtype, "kind", "")) == "c":
                    self.complex.append(i)
            return
        if i.result is None:
            return
        if i.op is Op.LOAD_VAR:
            k = V if i.attrs[0].id in self.varying_vars else U
        elif i.op in _ATOMICS:
            k = V
        elif i.op is Op.WORKER:
            k = U  # one worker runs a whole group
        elif i.op is Op.LANE:
            k = L
        else:
            k = _result_kind(i, [self.kind(a) for a in i.args])
        if k is not U:
            self.kinds[i.result.id] = k
            if _kind(i.result) == "c":
                self.complex.append(i)


def _exits(b: Block) -> bool:
    """Whether a break or continue of the loop whose body is `b` is in it."""
    for s in b.stmts:
        if isinstance(s, (Break, Continue)):
            return True
        if isinstance(s, If) and (_exits(s.then_body) or _exits(s.else_body)):
            return True
    return False


def _stack_use(b: Block, runs: set[int], depths: set[int], out: set[str]) -> set[str]:
    """What `b` (inner regions included) does with the arrays `runs` and the locals
    `depths`: "read", "write" (loads, stores), "set" (stores of a local)."""
    for s in b.stmts:
        if isinstance(s, Instr):
            if s.op is Op.LOAD and s.args[0].id in runs:
                out.add("read")
            elif s.op is Op.STORE and s.args[0].id in runs:
                out.add("write")
            elif s.op is Op.STORE_VAR and s.attrs[0].id in depths:
                out.add("set")
        elif isinstance(s, If):
            _stack_use(s.then_body, runs, depths, out)
            _stack_use(s.else_body, runs, depths, out)
        elif isinstance(s, (For, While)):
            _stack_use(s.body, runs, depths, out)
            if isinstance(s, While):
                _stack_use(s.cond_body, runs, depths, out)
    return out


def _pops(b: Block, runs: set[int], depths: set[int]) -> bool:
    """Whether a loop body reads adstack entries, or sets depths without pushing (pops
    whose entries nothing reads)."""
    use = _stack_use(b, runs, depths, set())
    return "read" in use or ("set" in use and "write" not in use)


def uniformity(body: Block, linear: list[Value], runs: set[int] | None = None,
               depths: set[int] | None = None, group: bool = False) -> Uniformity:
    """Classify `body`, a parallel loop's innermost body, whose threads run in lanes along
    the thread index values `linear` (module docstring); `runs` and `depths`: the ids of a
    reverse kernel's adstack heaps and depth locals, whose pops end-align the loops around
    them; `group`: a group keeps one value of each depth local, also where it is stored
    under varying control (passes/lane_stacks.py)."""
    varying: set[int] = set()
    while True:
        walk = _Walk({v.id for v in linear}, varying, runs or set(),
                     (depths or set()) if group else set(), depths or set())
        walk.block(body, False)
        if walk.varying_vars == varying:
            break
        varying = walk.varying_vars
    out = Uniformity(walk.kinds, varying, walk.masked, walk.aligned)
    out.blockers = _order_blockers(body, walk) + [
        f"a complex value varies between threads at {i.loc}: complex numbers have no SIMD "
        "lanes" for i in walk.complex[:1]]
    return out


def _sites(b: Block, depth: int, out: list[tuple[Instr, int]]) -> None:
    """Every instruction with the number of loops around it inside the body."""
    for s in b.stmts:
        if isinstance(s, Instr):
            out.append((s, depth))
        elif isinstance(s, If):
            _sites(s.then_body, depth, out)
            _sites(s.else_body, depth, out)
        elif isinstance(s, (For, While)):
            if isinstance(s, While):
                _sites(s.cond_body, depth + 1, out)
            _sites(s.body, depth + 1, out)


def _order_blockers(body: Block, walk: _Walk) -> list[str]:
    sites: list[tuple[Instr, int]] = []
    _sites(body, 0, sites)
    used = {a.id for i, _ in sites for a in i.args}
    per_array: dict[int, int] = {}
    for i, _ in sites:
        if i.op in _ATOMICS and not i.attrs:
            per_array[i.args[0].id] = per_array.get(i.args[0].id, 0) + 1
    out: list[str] = []
    for i, depth in sites:
        if i.op not in _ATOMICS or i.attrs:  # (attrs: an adstack overflow record)
            continue
        exact = getattr(i.args[-1].type, "kind", "f") in "iub"
        old_used = i.result is not None and i.result.id in used
        if exact and not old_used:
            continue  # wrapping integer sums, minima, maxima: any order gives the same
        if depth > 0 or per_array[i.args[0].id] > 1:
            what = "a float" if not exact else "an"
            out.append(f"{what} {i.op.name} at {i.loc} runs inside an inner loop or beside "
                       "another atomic on its array: lanes would change its order")
    return out
