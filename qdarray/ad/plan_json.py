"""Reverse plans on disk: a JSON form of `ReversePlan`, its cache key, load and store.

A plan is stored as `qdarray_reverse_<key>.json` in the kernel cache directory, beside the
generated modules it names. The key is the content hash (`cache.cache_key`) of the forward
kernel's IR as the transform takes it (its full `repr`: operations, types, local names and
source locations), the parameters with gradients, the target, debug mode, this format's
version and `cache.code_fingerprint()` (qdarray's own source), so any change to the kernel,
the call signature or the transform gives a new key.

The format is explicit: every node is a JSON list whose first element names its kind, every
field is type-checked when read, and anything unexpected makes the plan unreadable, in which
case the caller runs the transform again and overwrites it. Nothing read from the cache
directory is unpickled or evaluated here; the modules a plan names are imported only when
their content still hashes to the key recorded in the plan.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..kernels import cache
from ..kernels.ir import Frame, KernelIR, SourceLoc
from ..kernels.ops.adstack import AdStack
from ..kernels.types import KERNEL_DTYPES, ArrayType, ViewType
from .plan import KernelRecord, ReversePlan, StackRecord
from .sizing import Arg, Bin, Const, Expr, LoopVar, MaxOverRange, Read, Shape, Slot

FORMAT = 1
_DTYPES = {d.name: d for d in KERNEL_DTYPES}
_BINOPS = frozenset({"+", "-", "*", "//", "max", "min"})


class PlanFormatError(ValueError):
    """A stored plan that this version cannot read (the transform runs again)."""


def plan_key(forward: KernelIR, with_grad: tuple[str, ...], target: str, debug: bool
             ) -> str | None:
    """The cache key of the plan of `forward`'s reverse (see the module docstring); None
    when qdarray's source files changed since this process imported it (no plan is read or
    written then: the code running may not be the code on disk)."""
    code = cache.code_fingerprint()
    if code is None:
        return None
    parts = ("reverse plan", str(FORMAT), code, target, str(bool(debug)),
             ",".join(sorted(with_grad)), repr(forward))
    return cache.cache_key("\0".join(parts))


def load_plan(key: str) -> ReversePlan | None:
    """The stored plan for `key`, or None (absent, or damaged: unreadable or for another
    key, discarded with a warning)."""
    data = cache.read_record(f"qdarray_reverse_{key}")
    if data is None:
        return None
    try:
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            raise PlanFormatError("another format or key")
        return decode_plan(data)
    except (PlanFormatError, KeyError, TypeError, ValueError, IndexError) as exc:
        # The key covers qdarray's code and this format: a plan stored under it that does
        # not decode was damaged.
        cache.damaged(f"qdarray_reverse_{key}.json", f"{type(exc).__name__}: {exc}")
        return None


def store_plan(key: str, plan: ReversePlan) -> None:
    """Write `plan` under `key` (replacing any plan stored there). A plan this format cannot
    express is not stored (the next process runs the transform again)."""
    try:
        data = {"format": FORMAT, "key": key, **encode_plan(plan)}
    except (PlanFormatError, TypeError):
        return
    cache.write_record(f"qdarray_reverse_{key}", data)
    cache.count("reverse_plans_written")


# -- checked reads ------------------------------------------------------------------------------


def _int(x: Any) -> int:
    if type(x) is not int:
        raise PlanFormatError(f"expected an int, got {x!r}")
    return x


def _str(x: Any) -> str:
    if type(x) is not str:
        raise PlanFormatError(f"expected a string, got {x!r}")
    return x


def _list(x: Any, n: int | None = None) -> list[Any]:
    if type(x) is not list or (n is not None and len(x) != n):
        raise PlanFormatError(f"expected a list of {n} items, got {x!r}")
    return x


def _kind(x: Any) -> str:
    """The kind of a node `[kind, fields...]`."""
    if type(x) is not list or not x:
        raise PlanFormatError(f"expected [kind, ...], got {x!r}")
    return _str(x[0])


def _opt(decode: Callable[[Any], Any], x: Any) -> Any:
    return None if x is None else decode(x)


# -- types, locations, stacks -------------------------------------------------------------------


def encode_type(t: Any) -> Any:
    if isinstance(t, ArrayType):
        return ["array", t.dtype.name, t.ndim]
    if isinstance(t, ViewType):
        return ["view", t.dtype.name]
    return ["scalar", t.name]


def decode_type(x: Any) -> Any:
    kind = _kind(x)
    if kind == "array":
        _, name, ndim = _list(x, 3)
        return ArrayType(_DTYPES[_str(name)], _int(ndim))
    if kind == "view":
        return ViewType(_DTYPES[_str(_list(x, 2)[1])])
    if kind == "scalar":
        return _DTYPES[_str(_list(x, 2)[1])]
    raise PlanFormatError(f"unknown type {x!r}")


def encode_loc(loc: SourceLoc) -> Any:
    return [loc.file, loc.line, loc.col, loc.end_col, loc.func,
            [[f.func, f.file, f.line] for f in loc.stack]]


def decode_loc(x: Any) -> SourceLoc:
    file, line, col, end_col, func, stack = _list(x, 6)
    frames = tuple(Frame(_str(f[0]), _str(f[1]), _int(f[2]))
                   for f in (_list(s, 3) for s in _list(stack)))
    return SourceLoc(_str(file), _int(line), _int(col), _int(end_col), _str(func), frames)


def _encode_stack(s: StackRecord) -> Any:
    d = s.desc
    return [d.id, d.name, d.dtype.name, encode_loc(d.loc), s.task]


def _decode_stack(x: Any) -> StackRecord:
    sid, name, dtype, loc, task = _list(x, 5)
    return StackRecord(AdStack(_int(sid), _str(name), _DTYPES[_str(dtype)], decode_loc(loc)),
                       _opt(_int, task))


def _encode_params(params: tuple[tuple[str, Any], ...]) -> Any:
    return [[n, encode_type(t)] for n, t in params]


def _decode_params(x: Any) -> tuple[tuple[str, Any], ...]:
    return tuple((_str(p[0]), decode_type(p[1])) for p in (_list(q, 2) for q in _list(x)))


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
        if op not in _BINOPS:
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


# -- compiled kernels and the plan --------------------------------------------------------------


def _attr(a: Any) -> Any:
    if type(a) not in (int, str):
        raise PlanFormatError(f"a check site attribute {a!r} is neither an int nor a string")
    return a


def _encode_record(r: KernelRecord) -> Any:
    return [r.module, r.name, _encode_params(r.params),
            [[[_attr(a) for a in attrs], encode_loc(loc)] for attrs, loc in r.sites]]


def _decode_record(x: Any) -> KernelRecord:
    module, name, params, sites = _list(x, 4)
    if not _str(module).isalnum():
        raise PlanFormatError(f"module key {module!r}")
    decoded = tuple((tuple(_attr(a) for a in _list(s[0])), decode_loc(s[1]))
                    for s in (_list(t, 2) for t in _list(sites)))
    return KernelRecord(module, _str(name), _decode_params(params), decoded)


def encode_plan(p: ReversePlan) -> dict[str, Any]:
    """The JSON form of a plan (a dict of lists, strings and ints)."""
    return {
        "name": p.name,
        "params": _encode_params(p.params),
        "extra": _encode_params(p.extra),
        "stacks": [_encode_stack(s) for s in p.stacks],
        "n_stacks": p.n_stacks,
        "n_tasks": p.n_tasks,
        "grads": list(p.grads),
        "outer_slots": p.outer_slots,
        "heaps": [d.name for d in p.heaps],
        "exprs": [_opt(encode_expr, e) for e in p.exprs],
        "threads": [_opt(encode_expr, e) for e in p.threads],
        "count_deps": [list(d) for d in p.count_deps],
        "reverse": _opt(_encode_record, p.reverse),
        "counting": _opt(_encode_record, p.counting),
    }


def decode_plan(x: dict[str, Any]) -> ReversePlan:
    """The plan of `encode_plan`'s output (PlanFormatError, KeyError, ... for anything
    else)."""
    plan = ReversePlan(
        name=_str(x["name"]),
        params=_decode_params(x["params"]),
        extra=_decode_params(x["extra"]),
        stacks=tuple(_decode_stack(s) for s in _list(x["stacks"])),
        n_stacks=_int(x["n_stacks"]),
        n_tasks=_int(x["n_tasks"]),
        grads=tuple(_int(g) for g in _list(x["grads"])),
        outer_slots=_int(x["outer_slots"]),
        heaps=tuple(_DTYPES[_str(d)] for d in _list(x["heaps"])),
        exprs=tuple(_opt(decode_expr, e) for e in _list(x["exprs"])),
        threads=tuple(_opt(decode_expr, e) for e in _list(x["threads"])),
        count_deps=tuple((_int(d[0]), _int(d[1])) for d in (_list(q, 2) for q in
                                                               _list(x["count_deps"]))),
        # (kind 0, 1, 2: element reads, shape, scalar value; see sizer.Deps)
        reverse=_opt(_decode_record, x["reverse"]),
        counting=_opt(_decode_record, x["counting"]),
    )
    if len(plan.exprs) != len(plan.stacks) or len(plan.threads) != plan.n_tasks:
        raise PlanFormatError("the expressions do not match the stacks and tasks")
    nparams = len(plan.params)
    if any(not 0 <= g < nparams for g in plan.grads) or any(
            not (0 <= pos < nparams and kind in (0, 1, 2)) for kind, pos in plan.count_deps):
        raise PlanFormatError("a parameter position out of range")
    if any(s.task is not None and not 0 <= s.task < plan.n_tasks for s in plan.stacks):
        raise PlanFormatError("a stack's task out of range")
    return plan
