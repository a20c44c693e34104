"""What a kernel's compile read from Python, as text that another process can check.

The disk cache is keyed before the frontend (`entries.py`): by the kernel's code, the argument
specs and the options. What else the frontend read — globals, closure cells, attributes of
modules and other objects, the funcs it inlined, values of `qd.static(...)` — is recorded
while it builds the IR as a list of *dependencies*: a path from the kernel function to the
value, and a fingerprint of the value. A stored entry is used only when every dependency,
resolved again in the current process, has the same fingerprint.

A path is a tuple of steps: `"n:<name>"` looks a name up where the current function would
(closure cell, then globals, then builtins), `"a:<attr>"` takes an attribute of the value
reached so far, and `"f"` enters the `@qd.func` reached so far (later names are looked up in
its scope). Fingerprints are exact for constants (type and `repr`), containers of them,
dtypes, enum members, frozen dataclass instances, modules and library functions (by
qualified name), funcs and kernels (their code, defaults and annotations, `code_fingerprint`).
Any other value (a user-defined Python function, an arbitrary object) has no fingerprint
(`None`): a compile that reads one is not cached before the frontend (it still compiles
through the frontend in every process, and the generated module is still cached). In this
process such a value is watched by identity, and the attributes read from it by fingerprint,
as every other dependency is (`Recorder.watched`, `guards`).
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import enum
import hashlib
import types
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from .._dtypes import DType
from .._errors import AutodiffError
from .func import Func, Function

# The "fingerprint" of a value that has none, watched by identity in this process only.
_IDENTITY = "identity:"
_LIBRARIES = ("qdarray", "numpy", "math", "builtins", "numba", "operator", "functools")
_MISSING = object()


def _library(module: Any) -> bool:
    return isinstance(module, str) and module.split(".")[0] in _LIBRARIES


def _code_parts(code: types.CodeType, out: list[str]) -> None:
    out += [code.co_qualname, code.co_filename, str(code.co_firstlineno), code.co_code.hex(),
            code.co_linetable.hex(), code.co_exceptiontable.hex(), str(code.co_flags),
            str((code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount)),
            ",".join(code.co_names), ",".join(code.co_varnames), ",".join(code.co_freevars),
            ",".join(code.co_cellvars)]
    for c in code.co_consts:
        if isinstance(c, types.CodeType):
            _code_parts(c, out)
        else:
            out.append(f"{type(c).__name__}:{c!r}")


def code_fingerprint(fn: Any) -> str:
    """A hash of a Python function's code: bytecode, constants, names, file and positions
    (lines and columns), so that any edit that could change the IR or its source locations
    changes it."""
    parts: list[str] = []
    _code_parts(fn.__code__, parts)
    h = hashlib.sha256("\0".join(parts).encode())
    return h.hexdigest()[:32]


def _function(fn: Any) -> str | None:
    defaults = fingerprint(fn.__defaults__)
    kwdefaults = fingerprint(fn.__kwdefaults__)
    if defaults is None or kwdefaults is None:
        return None
    return f"{code_fingerprint(fn)}|{defaults}|{kwdefaults}"


def _all(values: Iterable[Any]) -> list[str] | None:
    """The fingerprints of `values` (None when one has none)."""
    out = []
    for v in values:
        fp = fingerprint(v)
        if fp is None:
            return None
        out.append(fp)
    return out


def fingerprint(value: Any) -> str | None:
    """Text that is equal for two values exactly when the frontend would treat them alike
    (see the module docstring); None when there is no such text."""
    t = type(value)
    if value is None or t in (bool, int, float, complex, str, bytes, range):
        return f"{t.__name__}:{value!r}"
    if t in (tuple, list):
        items = _all(value)
        return None if items is None else f"{t.__name__}({','.join(items)})"
    if t in (set, frozenset):
        items = _all(value)
        return None if items is None else f"set({','.join(sorted(items))})"
    if t is dict:
        keys = _all(value.keys())
        values = _all(value.values())
        if keys is None or values is None:
            return None
        pairs = sorted(f"{k}={v}" for k, v in zip(keys, values, strict=True))
        return "dict(" + ",".join(pairs) + ")"
    if isinstance(value, np.generic):
        return f"np.{value.dtype.name}:{value!r}"
    if t is DType:
        return f"dtype:{value.name}"
    if isinstance(value, np.dtype):
        return f"np.dtype:{value.str}"
    if t is types.ModuleType:
        return f"module:{value.__name__}"
    if isinstance(value, Func):
        try:
            annotations = fingerprint(value.annotations())
        except Exception:  # noqa: BLE001 - the frontend reports bad annotations
            return None
        body = _function(value.fn)
        return None if body is None or annotations is None else f"func:{body}|{annotations}"
    if isinstance(value, Function):  # a kernel
        return f"kernel:{code_fingerprint(value.fn)}"
    if isinstance(value, type):
        name = f"{value.__module__}.{value.__qualname__}"
        if dataclasses.is_dataclass(value):
            fields = [(f.name, fingerprint(f.type)) for f in dataclasses.fields(value)]
            if any(ft is None for _, ft in fields):
                return None
            return f"dataclass:{name}({','.join(f'{n}:{ft}' for n, ft in fields)})"
        return f"class:{name}" if _library(value.__module__) else None
    if isinstance(value, np.ufunc):
        return f"ufunc:{value.__name__}"
    if isinstance(value, types.BuiltinFunctionType):
        owner = getattr(value, "__self__", None)
        if owner is not None and type(owner) is not types.ModuleType:
            # a bound method of a built-in object (SIZES.index): that object is read
            # through its own path; this names the method
            return f"method:{type(owner).__qualname__}.{value.__name__}"
        return f"builtin:{getattr(value, '__module__', None)}.{value.__name__}"
    if isinstance(value, types.FunctionType):
        if _library(value.__module__):
            return f"function:{value.__module__}.{value.__qualname__}"
        return None  # user code: what it computes is not known here
    if isinstance(value, enum.Enum):
        return f"enum:{t.__module__}.{t.__qualname__}.{value.name}:{fingerprint(value.value)}"
    params = getattr(t, "__dataclass_params__", None)
    if params is not None and params.frozen:
        values = _all(getattr(value, f.name) for f in dataclasses.fields(value))
        return None if values is None else f"{fingerprint(t)}({','.join(values)})"
    # Any other object could steer the compile in ways the recorder does not see (its
    # truth value, comparisons, iteration): the kernel is not cached before the frontend.
    return None


def _scope_lookup(fn: Any, name: str) -> Any:
    code = fn.__code__
    if fn.__closure__ and name in code.co_freevars:
        cell = fn.__closure__[code.co_freevars.index(name)]
        try:
            return cell.cell_contents
        except ValueError:
            pass
    value = fn.__globals__.get(name, _MISSING)
    if value is _MISSING:
        value = getattr(builtins, name, _MISSING)
    return value


def resolve(fn: Any, path: Sequence[str]) -> Any:
    """The value at `path` from function `fn` now (`_MISSING` when a step fails)."""
    scope = fn
    value: Any = None
    for step in path:
        if step == "f":
            if not isinstance(value, Func):
                return _MISSING
            scope = value.fn
        elif step.startswith("n:"):
            value = _scope_lookup(scope, step[2:])
        elif step.startswith("a:"):
            value = getattr(value, step[2:], _MISSING)
        else:
            return _MISSING
        if value is _MISSING:
            return _MISSING
    return value


def unchanged(fn: Any, deps: Sequence[tuple[tuple[str, ...], str]]) -> bool:
    """Whether every dependency resolves to a value with its recorded fingerprint."""
    for path, fp in deps:
        value = resolve(fn, path)
        if value is _MISSING or fingerprint(value) != fp:
            return False
    return True


class Recorder:
    """Collects the dependencies of one kernel compile (the frontend calls it).

    Paths of Python objects are known by identity while the compile runs (the recorder keeps
    the objects alive, so identities are not reused). An object reached another way (the
    item of a tuple, the result of `qd.static`) has no path: reading an attribute of it or
    inlining it as a func makes the compile uncacheable.
    """

    def __init__(self, kernel_src: Any) -> None:
        self.deps: dict[tuple[str, ...], str] = {}
        self.cacheable = True
        self._paths: dict[int, tuple[Any, tuple[str, ...]]] = {}
        self._scopes: dict[int, tuple[Any, tuple[str, ...]]] = {id(kernel_src): (kernel_src, ())}

    def _note(self, path: tuple[str, ...], value: Any) -> None:
        fp = fingerprint(value)
        if fp is None:
            # Not describable to another process, but watched in this one by identity (a
            # rebinding compiles again), and its attributes get paths of their own.
            self.cacheable = False
            fp = f"{_IDENTITY}{id(value)}"
        self.deps[path] = fp
        if type(value) not in (bool, int, float, str, type(None)):
            self._paths[id(value)] = (value, path)

    def scope_path(self, src: Any) -> tuple[str, ...] | None:
        """The path of the function whose source is `src` (() for the kernel; None for an
        inlined func reached without a path)."""
        entry = self._scopes.get(id(src))
        return entry[1] if entry is not None and entry[0] is src else None

    def name(self, src: Any, name: str, value: Any) -> Any:
        """The frontend looked `name` up in the scope of `src` (a global, closure or
        builtin) and found `value`: the value to compile with (`value`; a `Pinned` recorder's
        own)."""
        prefix = self.scope_path(src)
        if prefix is None:
            self.cacheable = False
            return value
        path = prefix + (f"n:{name}",)
        value = self.value_at(path, value)
        self._note(path, value)
        return value

    def attribute(self, base: Any, name: str, value: Any) -> Any:
        """The frontend read `base.name` (a Python object's attribute) and found `value`:
        the value to compile with, as `name` returns it."""
        entry = self._paths.get(id(base))
        if entry is None or entry[0] is not base:
            self.cacheable = False
            return value
        path = entry[1] + (f"a:{name}",)
        value = self.value_at(path, value)
        self._note(path, value)
        return value

    def value_at(self, path: tuple[str, ...], value: Any) -> Any:
        """The value the compile uses for the dependency at `path`, found to be `value`."""
        return value

    def enter(self, func: Any, src: Any) -> None:
        """The frontend inlines `func`, whose source is `src`."""
        entry = self._paths.get(id(func))
        if entry is None or entry[0] is not func:
            self.cacheable = False
            return
        self._scopes[id(src)] = (src, entry[1] + ("f",))

    def static(self, src: Any, node: ast.expr, local: dict[str, Any], env: dict[str, Any]
               ) -> None:
        """`qd.static(node)` is evaluated with compile-time locals `local` and the function's
        globals and closure `env`: record the globals it reads and the attribute chains it
        follows (`a.b.c` from a name); an attribute of anything else makes it uncacheable."""
        chained: set[int] = set()
        for n in ast.walk(node):
            if isinstance(n, ast.Attribute) and id(n) not in chained:
                chain = []
                base: ast.expr = n
                while isinstance(base, ast.Attribute):
                    chained.add(id(base))
                    chain.append(base.attr)
                    base = base.value
                if not isinstance(base, ast.Name):
                    self.opaque()
                    continue
                value = self._static_name(src, base.id, local, env)
                chained.add(id(base))
                for attr in reversed(chain):
                    if value is _MISSING:
                        break
                    nxt = getattr(value, attr, _MISSING)
                    if nxt is not _MISSING:
                        self.attribute(value, attr, nxt)
                    value = nxt
            elif isinstance(n, ast.Name) and id(n) not in chained:
                self._static_name(src, n.id, local, env)

    def _static_name(self, src: Any, name: str, local: dict[str, Any], env: dict[str, Any]
                     ) -> Any:
        if name in local:
            value = local[name]  # a compile-time local: its origin is recorded already
            if type(value).__module__ == "qdarray.kernels.frontend.values":
                return _MISSING  # the frontend's own (arrays, structs): from the specs
            return value
        value = env.get(name, _MISSING)
        if value is _MISSING:
            value = getattr(builtins, name, _MISSING)
        if value is not _MISSING:
            self.name(src, name, value)
        return value

    def opaque(self) -> None:
        """The compile read something the recorder cannot describe."""
        self.cacheable = False

    def result(self) -> list[tuple[tuple[str, ...], str]] | None:
        """The dependencies, sorted (None when the compile is not cacheable)."""
        if not self.cacheable:
            return None
        return sorted(self.deps.items())

    def watched(self) -> list[tuple[tuple[str, ...], str]]:
        """Every dependency with a path, for the checks of this process (`guards`): also
        those of an uncacheable compile, values without a fingerprint by identity."""
        return sorted(self.deps.items())


class Pinned(Recorder):
    """A recorder that compiles with the values a kernel's earlier compile read (`pinned`:
    path -> value, from `snapshot`) instead of those bound now: the reverse of a launch
    recorded on a tape uses the globals and attributes its forward used, even when they were
    rebound before the reverse runs. `qd.static(...)` evaluates with the pinned globals and
    closure values; an attribute it reads that was rebound cannot be pinned and raises."""

    def __init__(self, kernel_src: Any, pinned: dict[tuple[str, ...], Any]) -> None:
        super().__init__(kernel_src)
        self.pinned = pinned
        self._static: ast.expr | None = None

    def value_at(self, path: tuple[str, ...], value: Any) -> Any:
        if path not in self.pinned:
            return value
        old = self.pinned[path]
        if (self._static is not None and path[-1].startswith("a:") and old is not value
                and fingerprint(old) != fingerprint(value)):
            # qd.static evaluates the expression itself, with the attribute as it is now
            raise AutodiffError(
                f"qd.static({ast.unparse(self._static)}) reads "
                f"{'.'.join(p[2:] for p in path if p != 'f')}, which was rebound after the "
                "launch whose reverse this is. Use a global name inside qd.static, or keep "
                "the attribute until the gradient is taken.")
        return old

    def static(self, src: Any, node: ast.expr, local: dict[str, Any], env: dict[str, Any]
               ) -> None:
        prefix = self.scope_path(src)
        if prefix is not None:
            for key in list(env):
                env[key] = self.pinned.get(prefix + (f"n:{key}",), env[key])
        self._static = node
        try:
            super().static(src, node, local, env)
        finally:
            self._static = None


def snapshot(fn: Any, checks: list[list[Any]]) -> tuple[tuple[Any, ...], ...] | None:
    """The values the guarded dependencies `checks` (a kernel's `_guards`) have now, as
    (path, value, fingerprint, where) rows: what a compile now reads, to compile with again
    later (`Pinned`, `changed`). None when there are none."""
    if not checks:
        return None
    return tuple((c[4], _current(c[0], c[1], c[2]), c[5], tuple(c[:3])) for c in checks)


def changed(fn: Any, snap: tuple[tuple[Any, ...], ...]) -> dict[tuple[str, ...], Any] | None:
    """The values of snapshot `snap` as path -> value when one of them is no longer the one
    bound now (by identity, else by fingerprint); None when all still are."""
    for path, value, fp, where in snap:
        current = _current(*where)
        if current is not value and fingerprint(resolve(fn, path)) != fp:
            return {row[0]: row[1] for row in snap}
    return None


# -- guards: has a value the compiles read changed since? -------------------------------------

# Fingerprints of values the user does not rebind in practice (modules, library functions and
# classes, dtypes): not watched at each call.
_LIBRARY_KINDS = ("module:", "class:", "builtin:", "function:", "ufunc:", "dtype:", "method:",
                  "np.dtype:")
_DICT, _CELL, _ATTR = 0, 1, 2


def _where(fn: Any, path: Sequence[str]) -> tuple[int, Any, str] | None:
    """Where the last step of `path` reads its value: (kind, container, key)."""
    scope = fn
    value: Any = None
    for k, step in enumerate(path):
        last = k == len(path) - 1
        if step == "f":
            if not isinstance(value, Func):
                return None
            scope = value.fn
            continue
        name = step[2:]
        if step.startswith("n:"):
            code = scope.__code__
            if scope.__closure__ and name in code.co_freevars:
                cell = scope.__closure__[code.co_freevars.index(name)]
                where: tuple[int, Any, str] = (_CELL, cell, name)
            else:
                where = (_DICT, scope.__globals__, name)
        elif step.startswith("a:"):
            if type(value) is types.ModuleType:
                where = (_DICT, vars(value), name)
            else:
                where = (_ATTR, value, name)
        else:
            return None
        if last:
            return where
        value = resolve(fn, path[:k + 1])
        if value is _MISSING:
            return None
    return None


def guards(fn: Any, deps: Sequence[tuple[tuple[str, ...], str]]) -> list[list[Any]]:
    """Cheap checks of the user values among `deps`: [kind, container, key, value, path,
    fingerprint] each (`holds` runs them at every call)."""
    out = []
    for path, fp in deps:
        if fp.startswith(_LIBRARY_KINDS):
            continue
        where = _where(fn, path)
        if where is None:
            continue
        value = resolve(fn, path)
        out.append([*where, value, path, fp])
    return out


def _current(kind: int, container: Any, key: str) -> Any:
    if kind == _DICT:
        return container.get(key, _MISSING)
    if kind == _CELL:
        try:
            return container.cell_contents
        except ValueError:
            return _MISSING
    return getattr(container, key, _MISSING)


# Counts the guarded values `holds` found rebound to an equal value (and watches from then
# on): a snapshot of a kernel's guarded values stays valid while it does not move.
REBOUND = [0]


def holds(fn: Any, checks: list[list[Any]]) -> bool:
    """Whether every guarded value is still the one the compiles read (by identity, else by
    fingerprint: an equal value bound anew holds, and is watched from now on). Runs at every
    kernel call: a global (the common case) is looked up in place."""
    for check in checks:
        kind = check[0]
        if kind == _DICT:
            current = check[1].get(check[2], _MISSING)
        else:
            current = _current(kind, check[1], check[2])
        if current is check[3]:
            continue
        if fingerprint(resolve(fn, check[4])) != check[5]:
            return False
        check[3] = current
        REBOUND[0] += 1
    return True
