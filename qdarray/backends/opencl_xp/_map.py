"""The strided map kernel every elementwise operation, cast and copy is built from.

`launch_map(key, out, operands, compute, body)` writes `out[i] = body(operand values)` for
every index `i` of `out`: operands are arrays of `out`'s shape (broadcast views with stride-0
axes included) or scalars. Layouts are simplified first (length-1 axes dropped, axes merged
where every operand is contiguous across them), so a map over C-contiguous operands is a flat
loop `out[i] = f(a[i], b[i])`, and only truly strided operands pay for index arithmetic.

Kernels run one work-item per element in work-groups of `DeviceState.local_size`. A kernel
is generated once per (key, layout class) and device.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ._clarray import ClArray
from ._runtime import DeviceState, ctype, fp64_pragma, ptype, scalar_arg

_KERNELS: dict[tuple[Any, ...], Any] = {}
UNROLL = 4  # elements per work-item of large flat maps on GPUs


class Scalar:
    """A scalar operand: `value` passed as a kernel argument of `dtype`."""

    __slots__ = ("value", "dtype")

    def __init__(self, value: Any, dtype: np.dtype) -> None:
        self.value = value
        self.dtype = np.dtype(dtype)


def broadcast_shapes(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    ndim = max((len(s) for s in shapes), default=0)
    out = []
    for axis in range(ndim):
        n = 1
        for s in shapes:
            k = axis - (ndim - len(s))
            if k < 0:
                continue
            m = s[k]
            if m != 1:
                if n != 1 and n != m:
                    raise ValueError(
                        f"operands could not be broadcast together with shapes "
                        f"{' '.join(str(tuple(x)) for x in shapes)}")
                n = m
        out.append(n)
    return tuple(out)


def broadcast_to(x: ClArray, shape: tuple[int, ...]) -> ClArray:
    """A view of `x` with `shape` (stride 0 along broadcast axes)."""
    if x.shape == shape:
        return x
    extra = len(shape) - x.ndim
    if extra < 0:
        raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    strides = []
    for axis, n in enumerate(shape):
        k = axis - extra
        if k < 0:
            strides.append(0)
            continue
        m = x.shape[k]
        if m == n:
            strides.append(x.strides[k] if n != 1 else 0)
        elif m == 1:
            strides.append(0)
        else:
            raise ValueError(f"cannot broadcast shape {x.shape} to {shape}")
    return x._view(shape, tuple(strides), x.offset)


def _simplify(shape: tuple[int, ...], strides: list[tuple[int, ...]]
              ) -> tuple[list[int], list[list[int]]]:
    """Drop length-1 axes and merge axes that are contiguous for every operand."""
    dims = [k for k, n in enumerate(shape) if n != 1]
    out_shape = [shape[k] for k in dims]
    out_strides = [[s[k] for k in dims] for s in strides]
    k = len(out_shape) - 1
    while k > 0:
        n = out_shape[k]
        if all(s[k - 1] == s[k] * n for s in out_strides):
            out_shape[k - 1] *= n
            del out_shape[k]
            for s in out_strides:
                s[k - 1] = s[k]
                del s[k]
        k -= 1
    return out_shape, out_strides


def _signature(arrays: Sequence[ClArray], shape: tuple[int, ...]
               ) -> tuple[list[int], list[list[int]], tuple[Any, ...]]:
    strides = [a.elem_strides() for a in arrays]
    sshape, sstrides = _simplify(shape, strides)
    # Layout class per array: "flat" when it is a plain run of the flattened index.
    flat_strides = []
    step = 1
    for n in reversed(sshape):
        flat_strides.append(step)
        step *= n
    flat_strides.reverse()
    classes = tuple("f" if s == flat_strides else "s" for s in sstrides)
    return sshape, sstrides, classes


def _loop_head(unroll: int) -> list[str]:
    """One element per work-item, or `unroll` elements a global size apart (independent loads
    in flight: what a GPU needs to reach its memory bandwidth on flat maps)."""
    if unroll == 1:
        return ["  long gid = get_global_id(0);", "  if (gid < n) {"]
    return ["  long g0 = get_global_id(0), step = get_global_size(0);",
            "  #pragma unroll",
            f"  for (int u = 0; u < {unroll}; ++u) {{",
            "    long gid = g0 + u * step;",
            "    if (gid >= n) break;"]


def _source(name: str, out_dtype: np.dtype, kinds: list[tuple[str, np.dtype]],
            compute: Sequence[np.dtype], classes: tuple[str, ...], ndim: int,
            body: str, preamble: str, unroll: int = 1) -> str:
    """OpenCL C of one map kernel; `kinds[j]` is ("a", dtype) or ("s", dtype)."""
    # With several elements per work-item, `restrict` lets the compiler issue every load
    # before the stores (outputs never overlap inputs at other elements).
    ptr = " *restrict " if unroll > 1 else " *"
    params = [f"__global {ctype(out_dtype)}{ptr}o", "long o_off"]
    if classes[0] == "s":
        params += [f"long o_s{d}" for d in range(ndim)]
    loads = []
    arr_k = 1
    for j, (kind, dtype) in enumerate(kinds):
        ct = ptype(compute[j])
        if kind == "s":
            params.append(f"{ctype(dtype)} s{j}")
            src = f"s{j}"
        else:
            params += [f"__global const {ctype(dtype)}{ptr}p{j}", f"long p{j}_off"]
            if classes[arr_k] == "s":
                params += [f"long p{j}_s{d}" for d in range(ndim)]
                idx = " + ".join([f"p{j}_off"] + [f"i{d} * p{j}_s{d}" for d in range(ndim)])
            else:
                idx = f"p{j}_off + gid"
            src = f"p{j}[{idx}]"
            arr_k += 1
        if ct == "bool":
            loads.append(f"    bool a{j} = ({src} != 0);")
        else:
            loads.append(f"    {ct} a{j} = ({ct}){src};")
    params += ["long n"] + [f"long n{d}" for d in range(1, ndim)]
    decompose = []
    if "s" in classes and ndim:
        decompose.append("    long r = gid;")
        for d in range(ndim - 1, 0, -1):
            decompose.append(f"    long i{d} = r % n{d}; r /= n{d};")
        decompose.append("    long i0 = r;")
    if classes[0] == "s":
        oidx = " + ".join(["o_off"] + [f"i{d} * o_s{d}" for d in range(ndim)])
    else:
        oidx = "o_off + gid"
    store = f"({body})"
    if out_dtype == np.bool_:
        store = f"(uchar)(({body}) != 0)"
    else:
        store = f"({ctype(out_dtype)})({body})"
    lines = [fp64_pragma(out_dtype, *compute, *(d for _, d in kinds)) + preamble,
             f"__kernel void {name}({', '.join(params)})", "{",
             *_loop_head(unroll), *decompose, *loads, f"    o[{oidx}] = {store};", "  }", "}"]
    return "\n".join(lines) + "\n"


def _arg_dtypes(kinds: list[tuple[str, np.dtype]], classes: tuple[str, ...],
                ndim: int) -> list[Any]:
    """Each kernel argument's dtype (None for buffers), in `launch_map`'s order."""
    i64 = np.dtype(np.int64)
    out: list[Any] = [None, i64] + ([i64] * ndim if classes[0] == "s" else [])
    k = 1
    for kind, dtype in kinds:
        if kind == "s":
            out.append(np.dtype(np.uint8) if dtype == np.bool_ else dtype)
            continue
        out += [None, i64] + ([i64] * ndim if classes[k] == "s" else [])
        k += 1
    return out + [i64] * (1 + max(ndim - 1, 0))


def launch_map(key: Any, out: ClArray, operands: Sequence[ClArray | Scalar],
               compute: Sequence[np.dtype], body: Callable[[], str],
               preamble: Callable[[], str] | None = None) -> ClArray:
    """`out[i] = body(a0, a1, ...)` over every index of `out` (see the module docstring).

    Args:
        key: identifies `body`, `compute` and `preamble` (the kernel cache key's prefix).
        out: the result array (any strides).
        operands: arrays of `out`'s shape (broadcast views allowed) or `Scalar`s.
        compute: the dtype each operand is converted to before `body` sees it as `a<j>`.
        body: returns the C expression of the result.
        preamble: returns helper C functions the expression calls.
    """
    n = out.size
    if n == 0:
        return out
    st: DeviceState = out.qd_state
    arrays = [out] + [a for a in operands if not isinstance(a, Scalar)]
    sshape, sstrides, classes = _signature(arrays, out.shape)
    ndim = len(sshape)
    kinds = [("s", a.dtype) if isinstance(a, Scalar) else ("a", a.dtype) for a in operands]
    unroll = UNROLL if st.kind == "GPU" and "s" not in classes and n >= (1 << 20) else 1
    full_key = (st.index, key, out.dtype, tuple(kinds), classes, ndim, unroll)
    knl = _KERNELS.get(full_key)
    if knl is None:
        src = _source("qd_map", out.dtype, kinds, compute, classes, ndim, body(),
                      preamble() if preamble else "", unroll)
        knl = st.kernel(src, "qd_map", _arg_dtypes(kinds, classes, ndim))
        _KERNELS[full_key] = knl
    args: list[Any] = [out.base_data, out.elem_offset]
    if classes[0] == "s":
        args += sstrides[0]
    k = 1
    for a in operands:
        if isinstance(a, Scalar):
            args.append(scalar_arg(a.value, a.dtype))
            continue
        args += [a.base_data if a.base_data is not None else out.base_data, a.elem_offset]
        if classes[k] == "s":
            args += sstrides[k]
        k += 1
    args.append(n)
    args += sshape[1:]
    local = st.local_size
    items = -(-n // unroll)
    knl(st.queue, (-(-items // local) * local,), (local,), *args)
    return out
