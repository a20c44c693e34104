"""`@qd.kernel`: the callable object around a Python function (funcs: func.py).

A Kernel compiles once per argument signature (and debug mode) and keeps the launchers in a
dict keyed by the tuple of per-argument keys. The launcher of the last call is tried first:
its test (`args.compile_fits`, written for its signature) tells by identity tests whether
the arguments have that signature, so a launch repeated with arguments like the last one's
builds no key. `kernel.grad` is reverse mode's object for the kernel, made through
the hook reverse mode registers (`set_reverse`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._autodiff import TAPES
from .._dtypes import DType
from .._errors import KernelTypeError
from .args import KEY_FUNCS, compile_fits, signature_key
from .bound_reads import Reads, compile_record, read_paths
from .debug import _state
from .env import REBOUND, guards, holds, snapshot
from .func import Func, Function, func, unknown_keyword
from .options import DEFAULT_FLOAT
from .target import KernelTarget, target_of

__all__ = ["Func", "Kernel", "func", "kernel", "set_reverse", "RECORDERS"]


# Tapes recording kernel launches (`qd.ad.Tape`), shared with the namespace's operations; the
# innermost one of the launching thread runs and records each.
RECORDERS: list[Any] = TAPES

# Reverse mode's entry (`qdarray.ad` registers it with `set_reverse`): `REVERSE[0](kernel)`
# is the object `kernel.grad` returns. The kernel compiler never imports reverse mode.
REVERSE: list[Callable[[Kernel], Any]] = []


def set_reverse(make: Callable[[Kernel], Any]) -> None:
    """Register what `kernel.grad` returns for a kernel (reverse mode does, on import)."""
    REVERSE[:] = [make]


class Kernel(Function):
    """A `@qd.kernel`: calling it compiles (once per signature) and launches."""

    def __init__(self, fn: Any, default_float: Any = None) -> None:
        super().__init__(fn, "kernel", default_float)
        self.param_names = tuple(self._signature.parameters)
        self._nparams = len(self.param_names)
        # One launcher table per debug state, and one for the interpreter, for the default
        # float `_float` (the kernel's own, or the package-wide one it follows: when that
        # changes, `_use_float` switches to the tables of the new one).
        self._launchers: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
        self._interpreted: tuple[dict[Any, Any], dict[Any, Any]] = ({}, {})
        self._follows = self.default_float is None
        self._float = DEFAULT_FLOAT[0] if self.default_float is None else self.default_float
        self._by_float = {self._float: (self._launchers, self._interpreted)}
        # generations of the arrays the last launches only read (bound_reads.py)
        self._reads = Reads()
        self._grad: Any = None
        # Checks of the Python values the compiles read (env.guards), and every table of
        # launchers compiled with them (the reverse's register here too): when one of the
        # values changes, all signatures compile again, so none runs with a stale value.
        self._guards: list[list[Any]] = []
        self._guarded: set[tuple[str, ...]] = set()
        # snapshot_constants' last result, valid while (REBOUND, number of guards) is `_snap_at`
        self._snap: Any = None
        self._snap_at: Any = None
        self._tables: list[dict[Any, Any]] = [*self._launchers, *self._interpreted]
        # the launcher of the last call, per debug state (None: none, or tables cleared since)
        self._last: list[Any] = [None, None]

    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
        unknown = unknown_keyword(self._signature, kwargs)
        if unknown is not None:
            raise KernelTypeError(f"{self.__name__}() {unknown}")
        try:
            bound = self._signature.bind(*args, **kwargs)
        except TypeError as exc:
            raise KernelTypeError(f"{self.__name__}(): {exc}.") from None
        bound.apply_defaults()
        return tuple(bound.arguments.values())

    def resolved_float(self) -> DType:
        """The default float type this kernel compiles with now (options.py)."""
        return DEFAULT_FLOAT[0] if self.default_float is None else self.default_float

    def _use_float(self) -> None:
        """Switch to the launcher tables of the package-wide default float of now."""
        self._float = DEFAULT_FLOAT[0]
        tables = self._by_float.get(self._float)
        if tables is None:
            tables = self._by_float[self._float] = (({}, {}), ({}, {}))
            for table in (*tables[0], *tables[1]):
                self.register_table(table)
        self._launchers, self._interpreted = tables
        self._last = [None, None]

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        """Launch the kernel on `args` (compiling it first for a new signature)."""
        if kwargs or len(args) != self._nparams:
            args = self._bind(args, kwargs)
        if self._follows and self._float is not DEFAULT_FLOAT[0]:
            self._use_float()
        if self._guards and not holds(self.fn, self._guards):
            self.environment_changed()
        debug = _state["debug"]
        launcher = self._last[debug]
        if launcher is None or not launcher.fits(args):
            launcher = self._find(args, debug)
        if RECORDERS:
            RECORDERS[-1].record(self, args, None, launcher)
        else:
            launcher(args)
        if launcher.reads:
            launcher.record_reads(self._reads, args)

    def _find(self, args: tuple[Any, ...], debug: bool) -> Any:
        """The launcher of the arguments' signature from the table (compiled first for a new
        signature), remembered as the last one."""
        table = self._launchers[debug]
        try:
            key = tuple([KEY_FUNCS[type(a)](a) for a in args])
        except KeyError:
            key = tuple([signature_key(a) for a in args])
        launcher = table.get(key)
        if launcher is None:
            launcher = self._prepare(args, None)
            launcher.fits = compile_fits(key, launcher.bumps)
            table[key] = launcher
        self._last[debug] = launcher
        return launcher

    def forward_launcher(self, args: Sequence[Any]) -> Any:
        """The compiled launcher of these (bound) arguments' signature, None before the
        first launch with it."""
        try:
            key = tuple([KEY_FUNCS[type(a)](a) for a in args])
        except KeyError:
            key = tuple([signature_key(a) for a in args])
        return self._launchers[_state["debug"]].get(key)

    def interpret(self, *args: Any, **kwargs: Any) -> None:
        """Run the kernel through the IR interpreter instead of compiled code (slow; the
        reference semantics, used to test code generators)."""
        from .interp import INTERP  # with the launcher, on first use (import time)

        if kwargs or len(args) != self._nparams:
            args = self._bind(args, kwargs)
        if self._follows and self._float is not DEFAULT_FLOAT[0]:
            self._use_float()
        if self._guards and not holds(self.fn, self._guards):
            self.environment_changed()
        table = self._interpreted[_state["debug"]]
        key = tuple([signature_key(a) for a in args])
        launcher = table.get(key)
        if launcher is None:
            launcher = self._prepare(args, INTERP)
            table[key] = launcher
        if RECORDERS:
            RECORDERS[-1].record(self, args, INTERP, launcher)
        else:
            launcher(args)
        if launcher.reads:
            launcher.record_reads(self._reads, args)

    @property
    def grad(self) -> Any:
        """The reverse of this kernel: `kernel.grad(*args)` runs it on the same arguments,
        accumulating into the `.grad` of every argument that has one
        (`kernel.grad.interpret(*args)` runs it through the interpreter). See qdarray.ad."""
        if self._grad is None:
            self._grad = REVERSE[0](self)
        return self._grad

    def _prepare(self, args: tuple[Any, ...], target: KernelTarget | None) -> Any:
        from .launch import prepare, signature

        launcher: Any = prepare(self, args, target, _state["debug"])
        # arrays only read: their generations are recorded at each launch
        launcher.reads = read_paths(signature(self, args)[0], launcher.bumps)
        launcher.record_reads = compile_record(args, launcher.reads)
        self.watch(launcher.watched)
        return launcher

    def watch(self, deps: list[tuple[tuple[str, ...], str]] | None) -> None:
        """Check at each call the user values among `deps` (what a compile read)."""
        if not deps:
            return
        new = [d for d in deps if d[0] not in self._guarded]
        self._guarded.update(path for path, _ in new)
        self._guards += guards(self.fn, new)

    def snapshot_constants(self) -> Any:
        """The Python values (globals, closure cells, attributes, funcs) the compiles of this
        kernel read, as bound now; None when they read none. A tape keeps it with each
        launch it records and gives it back to the reverse (`launch_reverse(...,
        constants=)`), which compiles with these values when one was rebound since.

        Called after the launch's `holds` check, which sees every rebinding: the snapshot is
        made again only when a value was rebound or a guard added, so launches of a kernel
        on one tape share one snapshot object (the reverse compares them by identity
        first)."""
        at = (REBOUND[0], len(self._guards))
        if self._snap_at != at:
            self._snap = snapshot(self.fn, self._guards)
            self._snap_at = at
        return self._snap

    def register_table(self, table: dict[Any, Any]) -> None:
        """A table of launchers compiled from this kernel, cleared when a Python value its
        compiles read changes (`environment_changed`)."""
        if not any(t is table for t in self._tables):
            self._tables.append(table)

    def environment_changed(self) -> None:
        """A global, closure value or func a compile of this kernel read was rebound: every
        signature compiles again at its next call (with the values of now)."""
        for table in self._tables:
            table.clear()
        self._guards = []
        self._guarded = set()
        self._snap_at = None
        self._last = [None, None]

    def ir(self, *args: Any, **kwargs: Any) -> Any:
        """The IR this kernel compiles to for these arguments (after the compile pipeline;
        views not lowered). Print it with `qdarray.kernels.ir.format_kernel`."""
        from .launch import build_ir, signature

        args = self._bind(args, kwargs)
        return build_ir(self, signature(self, args)[0], debug=_state["debug"], lower=False)[0]

    def generated_source(self, *args: Any, **kwargs: Any) -> str:
        """The source that the kernel target of the arguments' device generates for these
        arguments (on the CPU, the Python source of a numba module)."""
        from .launch import build_ir, signature

        args = self._bind(args, kwargs)
        debug = _state["debug"]
        specs, device = signature(self, args)
        target = target_of(device)
        ir = build_ir(self, specs, debug=debug, lower=target.lowers_views)[0]
        return target.render(ir, debug=debug, device=device)

    def __repr__(self) -> str:
        return f"<qd.kernel {self.fn.__qualname__}>"


def kernel(fn: Any = None, *, default_float: Any = None) -> Any:
    """Compile a Python function into a parallel kernel.

    The outermost `for` loop runs in parallel (one thread per iteration); everything else
    runs sequentially in its thread. Parameter annotations are optional: types come from the
    call, and each new signature compiles once.

    Args:
        fn: the kernel function.
        default_float: the type Python floats take in the kernel where no other operand
            decides (`acc = 0.0`, `float(i)`, `i / 2`): qd.float32 or qd.float64; left out,
            the package-wide one (`qd.set_default_float`, float64 unless set).

    Returns:
        A `Kernel`; calling it launches on the device of its array arguments
        (`@qd.kernel(default_float=...)` returns the decorator that makes one).

    Example::

        @qd.kernel
        def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
            for i in range(x.shape[0]):
                y[i] = a * x[i] + y[i]
    """
    if fn is None:
        return lambda f: Kernel(f, default_float)
    return Kernel(fn, default_float)
