"""Kernel entries: the disk cache keyed before the frontend.

A kernel's first call in a new process should cost what loading its compiled code costs,
not the frontend, the passes and code generation. An *entry* is keyed by what decides the
generated code before any of that runs:

- the kernel function's code (`env.code_fingerprint`: bytecode, constants, names, file,
  lines and columns),
- the argument specs, the target, debug mode and the default float type (options.py),
- what it is for (`"forward"`, or the reverse with its set of gradients),
- qdarray's own code (`cache.code_fingerprint`), numba's and Python's versions.

It holds what the launcher needs (`records.KernelRecord`: the generated module's key, the
parameters and check sites), the parameters the kernel writes, and the *dependencies* the
frontend read from Python (`env.Recorder`): an entry is used only when each still resolves to
a value with the recorded fingerprint. Kernels whose compile reads something without a
fingerprint get no entry (they compile through the frontend in every process; their modules
are still cached by content).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import cache, env
from .args import ArgSpec
from .records import KernelRecord, RecordFormatError, as_list, as_str, decode_record
from .records import encode_record as _encode_record
from .types import type_str

FORMAT = 3
Deps = list[tuple[tuple[str, ...], str]]


def spec_text(spec: ArgSpec) -> str:
    """A spelling of an argument spec that is equal exactly when the specs are."""
    if spec.kind == "struct":
        fields = ",".join(f"{n}={spec_text(s)}" for n, s in spec.fields)
        cls = spec.cls
        name = f"{getattr(cls, '__module__', '')}.{getattr(cls, '__qualname__', '')}"
        return f"struct:{name}({fields})"
    return f"{spec.kind}:{type_str(spec.type)}:{'weak' if spec.weak else 'typed'}"


def entry_key(kernel: Any, specs: Sequence[tuple[str, ArgSpec]], target: str, debug: bool,
              purpose: str) -> str | None:
    """The key of a kernel's entry (see the module docstring); None when qdarray's source
    files changed since this process imported it (no entry is read or written then)."""
    code = cache.code_fingerprint()
    if code is None:
        return None
    parts = ["kernel entry", str(FORMAT), code, env.code_fingerprint(kernel.fn), target,
             str(bool(debug)), purpose, f"default_float={kernel.resolved_float().name}"]
    parts += [f"{name}={spec_text(spec)}" for name, spec in specs]
    return cache.cache_key("\0".join(parts))


def encode_deps(deps: Deps) -> Any:
    return [[list(path), fp] for path, fp in deps]


def decode_deps(x: Any) -> Deps:
    out = []
    for item in as_list(x):
        path, fp = as_list(item, 2)
        out.append((tuple(as_str(s) for s in as_list(path)), as_str(fp)))
    return out


@dataclass(frozen=True)
class Entry:
    """A stored forward kernel: its compiled record, written parameters, what it reads and
    writes of each (regions.derive), dependencies."""

    record: KernelRecord
    written: tuple[str, ...]
    access: Any
    deps: Deps


def load(kernel: Any, key: str) -> Entry | None:
    """The entry under `key` when its dependencies hold in this process (None: absent,
    stale, or damaged, which warns)."""
    data = cache.read_record(f"qdarray_entry_{key}")
    if data is None:
        return None
    try:
        if not isinstance(data, dict) or data.get("format") != FORMAT or data.get("key") != key:
            raise RecordFormatError("another format or key")
        entry = Entry(decode_record(data["record"]),
                      tuple(as_str(w) for w in as_list(data["written"])),
                      _decode_access(data["access"]),
                      decode_deps(data["deps"]))
    except (RecordFormatError, KeyError, TypeError, ValueError, IndexError) as exc:
        cache.damaged(f"qdarray_entry_{key}.json", f"{type(exc).__name__}: {exc}")
        return None
    if not env.unchanged(kernel.fn, entry.deps):
        return None
    return entry


def _decode_access(x: Any) -> Any:
    """An access summary as stored (JSON; regions.derive): checked for its outline."""
    if not isinstance(x, dict) or set(x) != {"reads", "writes", "order"}:
        raise RecordFormatError("an access summary of another form")
    for k in ("reads", "writes"):
        for entry in as_list(x[k]):
            name, axes = as_list(entry, 2)
            as_str(name)
            if axes is not None:
                for alternatives in as_list(axes):
                    as_list(alternatives)
    n = (len(x["reads"]), len(x["writes"]))
    for item in as_list(x["order"]):
        r, w, rel = as_list(item, 3)
        if not (isinstance(r, int) and isinstance(w, int) and 0 <= r < n[0] and 0 <= w < n[1]
                and rel in ("rbw", "raw", "mixed")):
            raise RecordFormatError("an access summary of another form")
    return x


def store(key: str, record: KernelRecord, written: Sequence[str], access: Any,
          deps: Deps) -> None:
    """Write an entry under `key` (replacing any entry stored there)."""
    try:
        data = {"format": FORMAT, "key": key, "record": _encode_record(record),
                "written": list(written), "access": access, "deps": encode_deps(deps)}
    except (RecordFormatError, TypeError):
        return
    cache.write_record(f"qdarray_entry_{key}", data)
    cache.count("entries_written")
