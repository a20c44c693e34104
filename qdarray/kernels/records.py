"""A compiled kernel as its launcher sees it, and the JSON form the disk cache stores.

A `KernelRecord` names the cache key of the kernel's generated module
(`Launcher.module_key`) and holds what debug-mode messages need: its parameters after
lowering and its check sites. A launcher built from a record (`launcher_of`, through the
kernel target's `cached_launcher`) is the same as one built from IR; it holds a *skeleton* of
the kernel's IR (parameters and check sites, no body), which is all a compiled launcher
reads. Only targets that keep their modules in the disk cache (`KernelTarget.caches_modules`)
record kernels. Kernel entries (`entries.py`) and reverse plans (`ad/transform/plan.py`)
store records, so a second process launches without building IR.

The JSON form is explicit: every node is a JSON list whose first element names its kind,
every field is type-checked when read, and anything unexpected raises `RecordFormatError`.
Nothing read from the cache directory is unpickled or evaluated here.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .ir import UNKNOWN_LOC, Block, Frame, Instr, KernelIR, Op, Param, SourceLoc, Value, instrs
from .target import KernelTarget, Launcher
from .types import KERNEL_DTYPES, ArrayType, ViewType

DTYPES = {d.name: d for d in KERNEL_DTYPES}


class RecordFormatError(ValueError):
    """A stored record that this version cannot read (the kernel compiles again)."""


@dataclass(frozen=True)
class KernelRecord:
    """A compiled kernel as its launcher sees it."""

    module: str                                            # cache key of the generated module
    name: str                                              # the kernel's name in messages
    params: tuple[tuple[str, Any], ...]                    # (name, type) after lowering
    sites: tuple[tuple[tuple[Any, ...], SourceLoc], ...]   # CHECK_INDEX (attrs, location)


def record_of(launcher: Launcher) -> KernelRecord | None:
    """The record of a compiled launcher (None for launchers whose code the disk cache does
    not keep: `KernelTarget.caches_modules`)."""
    if launcher.module_key is None:
        return None
    ir: KernelIR = launcher.kernel
    sites = tuple((i.attrs, i.loc) for i in instrs(ir.body) if i.op is Op.CHECK_INDEX)
    return KernelRecord(launcher.module_key, ir.name,
                        tuple((p.name, p.value.type) for p in ir.params), sites)


def skeleton(record: KernelRecord) -> KernelIR:
    """The parts of a compiled kernel's IR its launcher reads: parameters and check sites
    (each CHECK_INDEX without operands; the compiled code holds the real ones)."""
    params = tuple(Param(n, Value(k, t)) for k, (n, t) in enumerate(record.params))
    checks = tuple(Instr(Op.CHECK_INDEX, None, (), attrs, loc) for attrs, loc in record.sites)
    return KernelIR(record.name, params, Block(checks), UNKNOWN_LOC, ())


def launcher_of(record: KernelRecord, packers: list[Any], bumps: list[Any],
                target: KernelTarget, debug: bool, device: Any) -> Launcher | None:
    """A launcher of the recorded kernel on `target` (`packers` pack each argument, as
    `launch.packer` makes them), or None when its module is no longer in the disk cache (or
    no longer hashes to its key)."""
    return target.cached_launcher(record.module, skeleton(record), packers, bumps,
                                  debug=debug, device=device)


# -- checked reads ------------------------------------------------------------------------------


def as_int(x: Any) -> int:
    if type(x) is not int:
        raise RecordFormatError(f"expected an int, got {x!r}")
    return x


def as_str(x: Any) -> str:
    if type(x) is not str:
        raise RecordFormatError(f"expected a string, got {x!r}")
    return x


def as_list(x: Any, n: int | None = None) -> list[Any]:
    if type(x) is not list or (n is not None and len(x) != n):
        raise RecordFormatError(f"expected a list of {n} items, got {x!r}")
    return x


def kind_of(x: Any) -> str:
    """The kind of a node `[kind, fields...]`."""
    if type(x) is not list or not x:
        raise RecordFormatError(f"expected [kind, ...], got {x!r}")
    return as_str(x[0])


def optional(decode: Callable[[Any], Any], x: Any) -> Any:
    return None if x is None else decode(x)


def dtype_named(name: Any) -> Any:
    try:
        return DTYPES[as_str(name)]
    except KeyError:
        raise RecordFormatError(f"unknown dtype {name!r}") from None


# -- types, locations, records ------------------------------------------------------------------


def encode_type(t: Any) -> Any:
    if isinstance(t, ArrayType):
        return ["array", t.dtype.name, t.ndim]
    if isinstance(t, ViewType):
        return ["view", t.dtype.name]
    return ["scalar", t.name]


def decode_type(x: Any) -> Any:
    kind = kind_of(x)
    if kind == "array":
        _, name, ndim = as_list(x, 3)
        return ArrayType(dtype_named(name), as_int(ndim))
    if kind == "view":
        return ViewType(dtype_named(as_list(x, 2)[1]))
    if kind == "scalar":
        return dtype_named(as_list(x, 2)[1])
    raise RecordFormatError(f"unknown type {x!r}")


def encode_loc(loc: SourceLoc) -> Any:
    return [loc.file, loc.line, loc.col, loc.end_col, loc.func,
            [[f.func, f.file, f.line] for f in loc.stack]]


def decode_loc(x: Any) -> SourceLoc:
    file, line, col, end_col, func, stack = as_list(x, 6)
    frames = tuple(Frame(as_str(f[0]), as_str(f[1]), as_int(f[2]))
                   for f in (as_list(s, 3) for s in as_list(stack)))
    return SourceLoc(as_str(file), as_int(line), as_int(col), as_int(end_col), as_str(func),
                     frames)


def encode_params(params: tuple[tuple[str, Any], ...]) -> Any:
    return [[n, encode_type(t)] for n, t in params]


def decode_params(x: Any) -> tuple[tuple[str, Any], ...]:
    return tuple((as_str(p[0]), decode_type(p[1])) for p in (as_list(q, 2) for q in as_list(x)))


def _attr(a: Any) -> Any:
    if type(a) not in (int, str):
        raise RecordFormatError(f"a check site attribute {a!r} is neither an int nor a string")
    return a


def encode_record(r: KernelRecord) -> Any:
    return [r.module, r.name, encode_params(r.params),
            [[[_attr(a) for a in attrs], encode_loc(loc)] for attrs, loc in r.sites]]


def decode_record(x: Any) -> KernelRecord:
    module, name, params, sites = as_list(x, 4)
    if not as_str(module).isalnum():
        raise RecordFormatError(f"module key {module!r}")
    decoded = tuple((tuple(_attr(a) for a in as_list(s[0])), decode_loc(s[1]))
                    for s in (as_list(t, 2) for t in as_list(sites)))
    return KernelRecord(module, as_str(name), decode_params(params), decoded)
