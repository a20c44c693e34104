"""Reverse plans on disk: a JSON form of `ReversePlan`, load and store.

A plan is stored as `qdarray_reverse_<key>.json` in the kernel cache directory, beside the
generated modules it names. Its key is a kernel entry key (`kernels/entries.py`: the kernel
function's code, the argument specs, the parameters with gradients, the target, debug mode
and qdarray's own code), taken before the frontend runs; the plan also holds the parameters
the forward writes and the dependencies the frontend read from Python (globals, closures,
funcs), and is used only while those still hold. So a second process launches `kernel.grad`
without the frontend or the transform, and any change to the kernel, the call signature, the
values it read or the transform gives a new key or a stale plan.

The format is explicit: every node is a JSON list whose first element names its kind, every
field is type-checked when read, and anything unexpected makes the plan unreadable, in which
case the caller runs the transform again and overwrites it. Nothing read from the cache
directory is unpickled or evaluated here; the modules a plan names are imported only when
their content still hashes to the key recorded in the plan.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...kernels import cache, entries, env
from ...kernels.ops.adstack import AdStack
from ...kernels.records import RecordFormatError as PlanFormatError
from ...kernels.records import as_int as _int
from ...kernels.records import as_list as _list
from ...kernels.records import as_str as _str
from ...kernels.records import (
    decode_loc,
    decode_params,
    decode_record,
    dtype_named,
    encode_loc,
    encode_params,
    encode_record,
)
from ...kernels.records import kind_of as _kind
from ...kernels.records import optional as _opt
from ..sizing.bounds import BIN_OPS, Arg, Bin, Const, Expr, LoopVar, MaxOverRange, Read, Shape, Slot
from .plan import ReversePlan, StackRecord

FORMAT = 3


def load_plan(key: str, fn: Any
              ) -> tuple[ReversePlan, tuple[str, ...], entries.Deps] | None:
    """The stored plan for `key`, the parameters the forward writes and the plan's
    dependencies, when they hold for kernel function `fn` (None: absent, stale, or damaged:
    unreadable or for another key, discarded with a warning)."""
    data = cache.read_record(f"qdarray_reverse_{key}")
    if data is None:
        return None
    try:
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            raise PlanFormatError("another format or key")
        plan = decode_plan(data)
        written = tuple(_str(w) for w in _list(data["written"]))
        deps = entries.decode_deps(data["deps"])
    except (PlanFormatError, KeyError, TypeError, ValueError, IndexError) as exc:
        # The key covers qdarray's code and this format: a plan stored under it that does
        # not decode was damaged.
        cache.damaged(f"qdarray_reverse_{key}.json", f"{type(exc).__name__}: {exc}")
        return None
    if not env.unchanged(fn, deps):
        return None
    return plan, written, deps


def store_plan(key: str, plan: ReversePlan, written: Sequence[str], deps: entries.Deps
               ) -> None:
    """Write `plan` under `key` (replacing any plan stored there). A plan this format cannot
    express is not stored (the next process runs the transform again)."""
    try:
        data = {"format": FORMAT, "key": key, **encode_plan(plan), "written": list(written),
                "deps": entries.encode_deps(deps)}
    except (PlanFormatError, TypeError):
        return
    cache.write_record(f"qdarray_reverse_{key}", data)
    cache.count("reverse_plans_written")


# -- stacks ------------------------------------------------------------------------------------


def _encode_stack(s: StackRecord) -> Any:
    d = s.desc
    return [d.id, d.name, d.dtype.name, encode_loc(d.loc), s.task]


def _decode_stack(x: Any) -> StackRecord:
    sid, name, dtype, loc, task = _list(x, 5)
    return StackRecord(AdStack(_int(sid), _str(name), dtype_named(dtype), decode_loc(loc)),
                       _opt(_int, task))


# -- size expressions ---------------------------------------------------------------------------


def encode_expr(e: Expr) -> Any:
    """The JSON form of a size expression: `[kind, fields...]`."""
    if isinstance(e, Const):
        return ["const", e.value]
    if isinstance(e, Arg):
        return ["arg", e.name]
    if isinstance(e, Shape):
        return ["shape", e.name, e.axis]
    if isinstance(e, Read):
        return ["read", e.name, [encode_expr(i) for i in e.index]]
    if isinstance(e, Bin):
        return ["bin", e.op, encode_expr(e.a), encode_expr(e.b)]
    if isinstance(e, LoopVar):
        return ["var", e.id, e.name]
    if isinstance(e, MaxOverRange):
        return ["max", encode_expr(e.var), encode_expr(e.begin), encode_expr(e.end),
                encode_expr(e.body)]
    if isinstance(e, Slot):
        return ["slot", e.index]
    raise TypeError(f"no JSON form for the size expression {e!r}")


def decode_expr(x: Any) -> Expr:
    """The size expression of `encode_expr`'s output (PlanFormatError for anything else)."""
    kind = _kind(x)
    if kind == "const":
        return Const(_int(_list(x, 2)[1]))
    if kind == "arg":
        return Arg(_str(_list(x, 2)[1]))
    if kind == "shape":
        _, name, axis = _list(x, 3)
        return Shape(_str(name), _int(axis))
    if kind == "read":
        _, name, index = _list(x, 3)
        return Read(_str(name), tuple(decode_expr(i) for i in _list(index)))
    if kind == "bin":
        _, op, a, b = _list(x, 4)
        if op not in BIN_OPS:
            raise PlanFormatError(f"unknown operator {op!r}")
        return Bin(op, decode_expr(a), decode_expr(b))
    if kind == "var":
        _, vid, name = _list(x, 3)
        return LoopVar(_int(vid), _str(name))
    if kind == "max":
        _, var, begin, end, body = _list(x, 5)
        v = decode_expr(var)
        if not isinstance(v, LoopVar):
            raise PlanFormatError(f"MaxOverRange over {v!r}, not a loop variable")
        return MaxOverRange(v, decode_expr(begin), decode_expr(end), decode_expr(body))
    if kind == "slot":
        return Slot(_int(_list(x, 2)[1]))
    raise PlanFormatError(f"unknown size expression {x!r}")


def _encode_axes(axes: Any) -> Any:
    return [[encode_expr(v), encode_expr(b), encode_expr(e)] for v, b, e in axes]


def _decode_axes(x: Any) -> Any:
    out = []
    for a in _list(x):
        v, b, e = (decode_expr(p) for p in _list(a, 3))
        if not isinstance(v, LoopVar):
            raise PlanFormatError(f"a parallel loop over {v!r}, not a loop variable")
        out.append((v, b, e))
    return tuple(out)


# -- compiled kernels and the plan --------------------------------------------------------------


def encode_plan(p: ReversePlan) -> dict[str, Any]:
    """The JSON form of a plan (a dict of lists, strings and ints)."""
    return {
        "name": p.name,
        "params": encode_params(p.params),
        "extra": encode_params(p.extra),
        "stacks": [_encode_stack(s) for s in p.stacks],
        "n_stacks": p.n_stacks,
        "n_tasks": p.n_tasks,
        "grads": list(p.grads),
        "outer_slots": p.outer_slots,
        "heaps": [d.name for d in p.heaps],
        "exprs": [_opt(encode_expr, e) for e in p.exprs],
        "threads": [_opt(encode_expr, e) for e in p.threads],
        "count_deps": [list(d) for d in p.count_deps],
        "thread_exprs": [_opt(encode_expr, e) for e in p.thread_exprs],
        "axes": [_opt(_encode_axes, a) for a in p.axes],
        "reverse": _opt(encode_record, p.reverse),
        "counting": _opt(encode_record, p.counting),
    }


def decode_plan(x: dict[str, Any]) -> ReversePlan:
    """The plan of `encode_plan`'s output (PlanFormatError, KeyError, ... for anything
    else)."""
    plan = ReversePlan(
        name=_str(x["name"]),
        params=decode_params(x["params"]),
        extra=decode_params(x["extra"]),
        stacks=tuple(_decode_stack(s) for s in _list(x["stacks"])),
        n_stacks=_int(x["n_stacks"]),
        n_tasks=_int(x["n_tasks"]),
        grads=tuple(_int(g) for g in _list(x["grads"])),
        outer_slots=_int(x["outer_slots"]),
        heaps=tuple(dtype_named(d) for d in _list(x["heaps"])),
        exprs=tuple(_opt(decode_expr, e) for e in _list(x["exprs"])),
        threads=tuple(_opt(decode_expr, e) for e in _list(x["threads"])),
        count_deps=tuple((_int(d[0]), _int(d[1])) for d in (_list(q, 2) for q in
                                                               _list(x["count_deps"]))),
        # (kind 0, 1, 2: element reads, shape, scalar value; see sizer.Deps)
        thread_exprs=tuple(_opt(decode_expr, e) for e in _list(x["thread_exprs"])),
        axes=tuple(_opt(_decode_axes, a) for a in _list(x["axes"])),
        reverse=_opt(decode_record, x["reverse"]),
        counting=_opt(decode_record, x["counting"]),
    )
    if len(plan.exprs) != len(plan.stacks) or len(plan.threads) != plan.n_tasks or len(
            plan.thread_exprs) != len(plan.stacks) or len(plan.axes) != plan.n_tasks:
        raise PlanFormatError("the expressions do not match the stacks and tasks")
    nparams = len(plan.params)
    if any(not 0 <= g < nparams for g in plan.grads) or any(
            not (0 <= pos < nparams and kind in (0, 1, 2)) for kind, pos in plan.count_deps):
        raise PlanFormatError("a parameter position out of range")
    if any(s.task is not None and not 0 <= s.task < plan.n_tasks for s in plan.stacks):
        raise PlanFormatError("a stack's task out of range")
    return plan
