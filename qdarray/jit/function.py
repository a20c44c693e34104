"""A `qd.jit` function: one traced, fused program per signature, replayed on later calls.

The first call for a signature (signature.py) traces the function (trace.py) on the real
arguments and returns what that run returned; the steps are then planned (fusion.py) into
a program kept for the signature. Later calls run the program: the function's Python does
not run again. Inside a recording `qd.ad.Tape` (around the call, or one the function itself
enters) the calls are recorded as they would have been eagerly, except that a fused run
records one operation per stored result, whose VJP is a generated reverse kernel
(reverse.py).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .._array import Array
from .._creation_functions import asarray
from .._errors import DonatedArrayError
from ..ad.tape.functional import GRADIENTS
from .program import build, slots_in
from .signature import Binder
from .trace import Tracer, tracing


class Program:
    """The replayable program of one signature. After each step it lets go of the values
    no later step reads (`release`), as the function's own Python would have dropped them,
    so that their memory returns to the allocator while the program runs."""

    __slots__ = ("inputs", "size", "steps", "output", "release")

    def __init__(self, inputs: list[int], size: int, steps: list[Any], output: Any) -> None:
        self.inputs = inputs
        self.size = size
        self.steps = steps
        self.output = output
        self.release = _last_uses(steps, output)

    def run(self, leaves: Sequence[Any]) -> Any:
        env: list[Any] = [None] * self.size
        for slot, x in zip(self.inputs, leaves, strict=True):
            env[slot] = x
        for step, done in zip(self.steps, self.release, strict=True):
            step.run(env)
            for slot in done:
                env[slot] = None
        return build(self.output, env)


def _touched(step: Any) -> set[int]:
    """The slots a step reads or binds (a fused step's calls' too)."""
    calls = getattr(step, "calls", None) or [step]
    out: set[int] = set()
    for c in calls:
        out.update(c.reads)
        if c.out is not None:
            out.add(c.out)
        out.update(s for _, s in c.items)
    return out


def _last_uses(steps: list[Any], output: Any) -> list[tuple[int, ...]]:
    """For each step, the slots that no later step reads or binds and the result does not
    hold."""
    kept = set(slots_in(output))
    last: dict[int, int] = {}
    for k, step in enumerate(steps):
        for slot in _touched(step):
            last[slot] = k
    done: list[list[int]] = [[] for _ in steps]
    for slot, k in last.items():
        if slot not in kept:
            done[k].append(slot)
    return [tuple(d) for d in done]


class _Donated:
    """What a donated array holds after the call: any use raises."""

    __slots__ = ("what",)

    def __init__(self, what: str) -> None:
        self.what = what

    def __getattr__(self, name: str) -> Any:
        raise DonatedArrayError(
            f"This array was donated to {self.what} (donate_argnums), so its memory may now "
            "hold one of the call's results and it can no longer be used. Use the call's "
            "results, or leave the argument out of donate_argnums.")

    def __array__(self, *args: Any, **kwargs: Any) -> Any:
        return self.__getattr__("__array__")

    def __len__(self) -> int:
        return self.__getattr__("__len__")  # type: ignore[no-any-return]


class JitFunction:
    """`f` compiled per signature (module docstring); made by `qd.jit`."""

    def __init__(self, f: Callable[..., Any], static_argnums: Sequence[int],
                 static_argnames: Sequence[str], donate_argnums: Sequence[int]) -> None:
        self.binder = Binder(f, static_argnums, static_argnames)
        try:
            gradient = GRADIENTS.get(f)
        except TypeError:  # not weakly referenceable: not a gradient function
            gradient = None
        if gradient is not None:
            # qd.jit(qd.ad.grad(g)) runs qd.ad.grad(qd.jit(g)): g's fused runs and their
            # fused reverses, on the gradient's tape
            inner, remake = gradient
            f = remake(JitFunction(inner, static_argnums, static_argnames, ()))
        self.f = f
        self.donate = tuple(sorted(set(donate_argnums)))
        if set(self.donate) & self.binder.nums:
            raise ValueError(f"qd.jit: arguments {sorted(set(self.donate) & self.binder.nums)} "
                             "are both static and donated; a static argument is not an array.")
        self.programs: dict[Any, Program] = {}
        self.traces = 0
        functools.update_wrapper(self, f)

    def __repr__(self) -> str:
        return f"<qd.jit of {getattr(self.f, '__qualname__', self.f)!r}>"

    def __get__(self, obj: Any, objtype: Any = None) -> Any:
        if obj is None:
            return self
        return functools.partial(self, obj)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if tracing():  # inside another qd.jit's trace: that trace records this call
            return self.f(*args, **kwargs)
        if any(type(a) is np.ndarray for a in args) or any(
                type(v) is np.ndarray for v in kwargs.values()):
            args, kwargs = self._numpy_inputs(args, kwargs)
        key, leaves = self.binder.key(args, kwargs)
        program = self.programs.get(key)
        if program is None:
            result, program = self._trace(args, kwargs, leaves)
            self.programs[key] = program
        else:
            result = program.run(leaves)
        if self.donate:
            self._invalidate(args, result)
        return result

    def _numpy_inputs(self, args: tuple[Any, ...], kwargs: dict[str, Any]
                      ) -> tuple[tuple[Any, ...], dict[str, Any]]:
        """NumPy arrays among the arguments (not the static ones) as CPU arrays: inputs of
        the program, as `jax.jit` takes them (they are keyed by shape and dtype, not value)."""
        nums, names = self.binder.nums, self.binder.names
        args = tuple(asarray(a) if type(a) is np.ndarray and i not in nums else a
                     for i, a in enumerate(args))
        kwargs = {k: asarray(v) if type(v) is np.ndarray and k not in names else v
                  for k, v in kwargs.items()}
        return args, kwargs

    def _trace(self, args: tuple[Any, ...], kwargs: dict[str, Any], leaves: list[Any]
               ) -> tuple[Any, Program]:
        tracer = Tracer(self.f)
        inputs = []
        for x in leaves:
            slot = tracer.slot_of(x)
            inputs.append(tracer.add(x) if slot is None else slot)
        result = tracer.run(args, kwargs)
        self.traces += 1
        output = tracer.template(result)
        donated = [tracer.slot_of(a) for i, a in enumerate(args)
                   if i in self.donate and type(a) is Array]
        # (fusion, with the kernel compiler behind it, loads on the first trace: `import
        # qdarray` and a process that only runs cached kernels do not load the compiler)
        from .fusion import plan

        steps = plan(tracer.steps, output, [s for s in donated if s is not None],
                     tracer.objects)
        program = Program(inputs, len(tracer.objects), steps, output)
        return result, program

    def _invalidate(self, args: tuple[Any, ...], result: Any) -> None:
        returned = {id(x) for x in _arrays(result)}
        for i in self.donate:
            if i < len(args) and type(args[i]) is Array and id(args[i]) not in returned:
                args[i]._data = _Donated(repr(self))


def _arrays(x: Any) -> list[Any]:
    if type(x) is Array:
        return [x]
    if isinstance(x, (list, tuple)):
        return [a for v in x for a in _arrays(v)]
    if isinstance(x, dict):
        return [a for v in x.values() for a in _arrays(v)]
    return []
