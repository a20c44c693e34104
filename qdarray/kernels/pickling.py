"""Pickling kernels and funcs: by their module and name, or by their source.

A `@qd.kernel` or `@qd.func` pickles as what it is made of, never as compiled code: the
process that unpickles it compiles it again (or loads it from the kernel cache on its disk,
`cache.py`, when the generated code is already there), so pickles travel between processes
and machines with other devices, as `dask.distributed` and `multiprocessing` send them.

- Defined at the top level of an importable module: pickled by reference (module, qualified
  name); unpickling imports the module, as pickle does for functions.
- Anywhere else (inside a function, in `__main__`, in a module the other process cannot
  import): pickled by value, with `cloudpickle` (the function's code, the globals it names,
  its closure, its parameters' annotations evaluated) plus the text of its source file, so
  the other process parses the same source (its lines are put in `linecache`) even where the
  file does not exist. Unpickling the same pickle twice in one process gives the same object,
  which compiles once. Each pickle carries the values as they are when it is made: a global
  the kernel reads, changed since an earlier pickle, travels changed.
"""

from __future__ import annotations

import ast
import hashlib
import importlib
import linecache
import pickle
import sys
from types import CodeType
from typing import Any

# The kernels and funcs this process unpickled by value, by the hash of their pickle.
_REBUILT: dict[str, Any] = {}


def _by_reference(obj: Any) -> tuple[str, str] | None:
    """(module, qualified name) when importing them in another process gives `obj`."""
    module_name = getattr(obj, "__module__", None)
    qualname = getattr(obj, "__qualname__", "")
    if module_name in (None, "__main__") or "<locals>" in qualname:
        return None
    found: Any = sys.modules.get(module_name)
    for part in qualname.split("."):
        found = getattr(found, part, None)
    return (module_name, qualname) if found is obj else None


def reduce_function(obj: Any) -> tuple[Any, ...]:
    """`__reduce__` of a Kernel or Func (`obj.fn` is its Python function)."""
    ref = _by_reference(obj)
    if ref is not None:
        return (import_function, ref)
    # An object unpickled here travels on as the pickle it came from. Any other is pickled
    # afresh each time: the globals and closure values it carries may have changed since the
    # last pickle (a kernel watches them and compiles again here; the pickle must follow).
    payload = getattr(obj, "_pickle_payload", None)
    if payload is None:
        payload = _by_value(obj)
    return (rebuild_function, (type(obj), payload))


def _by_value(obj: Any) -> bytes:
    try:
        import cloudpickle  # type: ignore[import-untyped]
    except ImportError:
        raise pickle.PicklingError(
            f"{obj!r} is not defined at the top level of an importable module, so it pickles "
            "by value, which needs the cloudpickle package. Install cloudpickle (dask and "
            "distributed depend on it), or define the kernel at a module's top level."
        ) from None
    fn = obj.fn
    file = fn.__code__.co_filename
    text = "".join(linecache.getlines(file, fn.__globals__))
    # Names the source reads that the bytecode does not (cloudpickle sends only the globals
    # the bytecode names): annotations of locals, for one. The parameters' annotations are
    # sent evaluated (under `from __future__ import annotations` they are strings).
    code = fn.__code__
    names = {n.id for n in ast.walk(obj.source().tree) if isinstance(n, ast.Name)}
    names -= {*code.co_names, *code.co_varnames, *code.co_cellvars, *code.co_freevars}
    extra = {n: fn.__globals__[n] for n in sorted(names) if n in fn.__globals__}
    options = {"default_float": None if obj.default_float is None else obj.default_float.name}
    value = (fn, file, text, obj.annotations(), extra, options)
    return bytes(cloudpickle.dumps(value, protocol=5))


def _named_for(code: CodeType, file: str) -> CodeType:
    """`code`, and the code objects nested in it, with `file` as their file name."""
    consts = tuple(_named_for(c, file) if isinstance(c, CodeType) else c for c in code.co_consts)
    return code.replace(co_filename=file, co_consts=consts)


def import_function(module_name: str, qualname: str) -> Any:
    """Unpickle a kernel or func pickled by reference: import its module and find it."""
    found: Any = importlib.import_module(module_name)
    for part in qualname.split("."):
        found = getattr(found, part)
    return found


def rebuild_function(cls: type, payload: bytes) -> Any:
    """Unpickle a kernel or func pickled by value: its function with its source file's text
    in `linecache`, wrapped again as `cls` (once per payload in a process)."""
    key = hashlib.sha256(payload).hexdigest()
    obj = _REBUILT.get(key)
    if obj is not None:
        return obj
    fn, file, text, annotations, extra, options = pickle.loads(payload)
    # cloudpickle (3.1.3 on) sends code objects with the file name "<dynamic-code>"; the
    # source, its diagnostics and the kernel cache's key name the file the code came from.
    fn.__code__ = _named_for(fn.__code__, file)
    for name, value in extra.items():
        fn.__globals__.setdefault(name, value)
    lines = text.splitlines(keepends=True)
    linecache.checkcache(file)  # drop an entry for an older version of the file
    if lines and linecache.getlines(file) != lines:
        # The file is absent here, or holds other text than the code was compiled from: the
        # pickled text is the function's source. (mtime None: checkcache keeps the entry.)
        linecache.cache[file] = (len(text), None, lines, file)
    obj = cls(fn, **options)
    obj._annotations = annotations
    obj._pickle_payload = payload
    _REBUILT[key] = obj
    return obj
