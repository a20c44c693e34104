"""Global memory (arrays and views), shapes, mutable locals and debug-mode index checks.

LOAD(mem, *indices) and STORE(mem, *indices, value) address an array with one index per
dimension, or a view with one index (`base[offset + i]`). Indices must lie in [0, extent):
without debug mode an index outside is undefined behaviour, so the debug-mode pass puts a
CHECK_INDEX(i0, n0, i1, n1, ...) before every access; it stops the thread and reports
`attrs = (site id, array name, "array" | "view")` to the host when some `i_k` is outside
[0, n_k).

SUBVIEW(view, offset, size) is the kernel-side window `view[offset : offset + size]` (a view
of the same base). The frontend emits it for `v.subview(o, n)` and `v[a:b]`;
`passes/resolve_views.py` replaces it by offset arithmetic on the parameter view before any
other pass, so neither reverse mode nor the code generators meet it.
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .. import types as T
from ..ir import Op
from .table import defop


def _check_indices(mem: Any, idx: tuple[Any, ...], what: str) -> None:
    ndim = 1 if isinstance(mem, T.ViewType) else mem.ndim if isinstance(mem, T.ArrayType) else -1
    if ndim < 0:
        raise TypeError(f"{what} needs an array or a view; got {T.type_str(mem)}")
    if len(idx) != ndim:
        raise TypeError(f"{what} of {T.type_str(mem)} needs {ndim} indices; got {len(idx)}")
    for t in idx:
        if not T.is_int(t):
            raise TypeError(f"{what} indices must be integers; got {T.type_str(t)}")


def _load_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    _check_indices(types[0], types[1:], "LOAD")
    return types[0].dtype


def _store_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    _check_indices(types[0], types[1:-1], "STORE")
    if types[-1] is not types[0].dtype:
        raise TypeError(f"STORE of {T.type_str(types[-1])} into {T.type_str(types[0])}")
    return None


def _shape_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    (axis,) = attrs
    mem = types[0]
    ndim = 1 if isinstance(mem, T.ViewType) else getattr(mem, "ndim", -1)
    if not 0 <= axis < ndim:
        raise TypeError(f"SHAPE axis {axis} out of range for {T.type_str(mem)}")
    from ... import _dtypes

    return _dtypes.int64


def _load_var_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    return attrs[0].dtype


def _store_var_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    if types[0] is not attrs[0].dtype:
        raise TypeError(f"STORE_VAR of {T.type_str(types[0])} into {attrs[0]} "
                        f"({T.type_str(attrs[0].dtype)})")
    return None


def _check_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    if len(types) % 2 or not all(T.is_int(t) for t in types):
        raise TypeError("CHECK_INDEX takes integer (index, extent) pairs")
    return None


def _subview_rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
    from ... import _dtypes

    if not isinstance(types[0], T.ViewType):
        raise TypeError(f"SUBVIEW needs a view; got {T.type_str(types[0])}")
    if types[1] is not _dtypes.int64 or types[2] is not _dtypes.int64:
        raise TypeError("SUBVIEW offset and size must be int64")
    return types[0]


class ViewValue(NamedTuple):
    """A view as the interpreter holds it: 1-D base array, offset and size in elements."""

    base: Any
    offset: int
    size: int


def element(mem: Any, idx: tuple[Any, ...]) -> tuple[Any, Any]:
    """(NumPy array, index tuple) addressing one element of an array or view value."""
    if type(mem) is ViewValue:
        return mem.base, (mem.offset + int(idx[0]),)
    return mem, tuple(int(i) for i in idx)


def _load(rt: Any, attrs: Any, mem: Any, *idx: Any) -> Any:
    arr, where = element(mem, idx)
    return arr[where]


def _store(rt: Any, attrs: Any, mem: Any, *rest: Any) -> None:
    arr, where = element(mem, rest[:-1])
    arr[where] = rest[-1]


def _shape(rt: Any, attrs: Any, mem: Any) -> Any:
    n = mem.size if type(mem) is ViewValue else mem.shape[attrs[0]]
    return rt._np.type(n)


def _subview(rt: Any, attrs: Any, mem: Any, offset: Any, size: Any) -> ViewValue:
    return ViewValue(mem.base, mem.offset + int(offset), int(size))


def _load_adj(b: Any, instr: Any, g: Any) -> None:
    b.scatter_grad(b.indices(1, len(instr.args)), g)


def _store_adj(b: Any, instr: Any, g: Any) -> None:
    # The element's old value had no effect on anything after the store: its gradient is 0.
    idx = b.indices(1, len(instr.args) - 1)
    b.accum(len(instr.args) - 1, b.grad_at(idx))
    b.clear_grad(idx)


defop(Op.LOAD, "memory", None, _load_rule, _load, pure=False, adjoint=_load_adj,
      doc="mem[indices]")
defop(Op.STORE, "memory", None, _store_rule, _store, pure=False, adjoint=_store_adj,
      doc="mem[indices] = value")
defop(Op.SHAPE, "memory", 1, _shape_rule, _shape, doc="mem.shape[attrs[0]] as int64", host=True)
defop(Op.LOAD_VAR, "memory", 0, _load_var_rule, None, doc="the value of local attrs[0]")
defop(Op.STORE_VAR, "memory", 1, _store_var_rule, None, pure=False,
      doc="set local attrs[0]")
defop(Op.CHECK_INDEX, "memory", None, _check_rule, None, pure=False,
      doc="debug mode: stop the thread and report when an index is outside its extent")
defop(Op.SUBVIEW, "memory", 3, _subview_rule, _subview,
      doc="view[offset : offset + size]; attrs[0] is its source text (for messages)")
