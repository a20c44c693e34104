"""`qd.ad.Tape`: record the kernel launches of a block, then run their reverses.

Inside `with qd.ad.Tape(loss=y):` every kernel launch runs as usual and is recorded. On exit
the tape sets `y.grad` to 1 (the loss has one element) and runs the reverse of each recorded
launch, last first, each accumulating into the `.grad` of the arrays that have one. Before a
reverse runs, the tape checks that the arrays the launch only read still hold what it read:
a changed integer array (a loop bound) raises `AdStackSizingError`, a changed float input an
`AutodiffError` (either would make the gradients silently wrong).
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .._array import Array
from .._errors import AdStackSizingError, AutodiffError
from ..buffer_view import BufferView
from ..kernels.kernel import RECORDERS


@dataclass
class _Launch:
    kernel: Any
    args: tuple[Any, ...]
    target: Any  # the KernelTarget it ran on (None: its arrays' device)
    inputs: list[tuple[str, Any, int, Any]]  # (name, buffer token, generation, dtype)


def _arrays(names: Sequence[str], args: Sequence[Any]) -> list[tuple[str, Any]]:
    out: list[tuple[str, Any]] = []
    for name, a in zip(names, args, strict=True):
        if type(a) in (Array, BufferView):
            out.append((name, a))
        elif dataclasses.is_dataclass(a) and not isinstance(a, type):
            fields = dataclasses.fields(a)
            out += _arrays([f"{name}.{f.name}" for f in fields], [getattr(a, f.name)
                                                                   for f in fields])
    return out


def _token(a: Any) -> tuple[Any, Any]:
    arr = a._base if type(a) is BufferView else a
    return arr._buffer, arr._dtype


class Tape:
    """Records kernel launches and runs their reverses on exit.

    Args:
        loss: a one-element array created with `requires_grad=True`; its gradient is set to
            1 before the reverses run.
        validation: check every recorded launch for overwrites of elements it read (slow:
            runs each launch through the interpreter first; see `qdarray.ad.validate`).

    Example::

        x = qd.ones(4, dtype=qd.float32, requires_grad=True)
        y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
        with qd.ad.Tape(loss=y):
            square_sum(x, y)          # y[0] += x[i] * x[i]
        print(x.grad)                 # 2 * x
    """

    def __init__(self, loss: Any, *, validation: bool = False) -> None:
        if type(loss) is not Array:
            raise TypeError(f"Tape(loss=...) needs a qdarray Array; got {type(loss).__name__}.")
        if loss.grad is None:
            raise AutodiffError(
                f"The loss (an array of shape {loss.shape}, dtype {loss.dtype}) has no gradient, "
                "so the tape has nothing to start from. Use requires_grad=True when creating "
                "it, e.g. qd.zeros(1, dtype=qd.float32, requires_grad=True).")
        if loss.size != 1:
            raise ValueError(
                f"Tape(loss=...) needs a loss with one element; got shape {loss.shape}. Use a "
                "kernel that reduces it to one element first (e.g. out[0] += v).")
        self.loss = loss
        self.validation = validation
        self.launches: list[_Launch] = []
        self.done = False
        self.thread = threading.get_ident()

    def __enter__(self) -> Tape:
        RECORDERS.append(self)
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        RECORDERS.remove(self)
        if exc_type is None:
            self.grad()

    def record(self, kernel: Any, args: tuple[Any, ...], target: Any,
               launcher: Any) -> None:
        """Run one launch (checking it first in validation mode) and remember it, on the
        innermost tape of the launching thread (tapes of other threads do not see it)."""
        me = threading.get_ident()
        tape = next((t for t in reversed(RECORDERS) if t.thread == me), None)
        if tape is None:
            launcher(args)
        else:
            tape.keep(kernel, args, target, launcher)

    def keep(self, kernel: Any, args: tuple[Any, ...], target: Any,
             launcher: Any) -> None:
        if self.validation:
            from .validate import check_launch

            check_launch(kernel, args)
        launcher(args)
        written = set(dict(getattr(launcher.kernel, "meta", ())).get("written", ()))
        inputs = []
        for name, a in _arrays(kernel.param_names, args):
            if name not in written:
                buf, dtype = _token(a)
                inputs.append((name, buf, buf.generation, dtype))
        self.launches.append(_Launch(kernel, args, target, inputs))

    def grad(self) -> None:
        """Seed the loss's gradient with 1 and run the recorded reverses, last first."""
        if self.done:
            raise RuntimeError("This tape's reverses have already run. Use a new Tape.")
        self.done = True
        from .launch import grad_of, launch_reverse

        g = self.loss.grad
        assert g is not None
        g._data[...] = 1
        g._buffer.generation += 1
        for launch in reversed(self.launches):
            if not any(grad_of(a) is not None for _, a in _arrays(launch.kernel.param_names,
                                                                   launch.args)):
                continue  # no gradient in or out (e.g. a kernel filling an index array)
            self.check_inputs(launch)
            launch_reverse(launch.kernel, launch.args, launch.target)

    @staticmethod
    def check_inputs(launch: _Launch) -> None:
        for name, buf, generation, dtype in launch.inputs:
            if buf.generation == generation:
                continue
            what = (f"'{name}', an argument kernel '{launch.kernel.__name__}' only reads, was "
                    "written after the launch was recorded")
            if dtype.kind in "iu":
                raise AdStackSizingError(
                    f"{what}. It may bound loops, so the reverse would size and run them with "
                    "the new values. Use a copy for the later writes, or record the launches "
                    "in separate tapes.")
            raise AutodiffError(
                f"{what}, so its reverse would use the new values. Use a copy for the later "
                "writes, or record the launches in separate tapes.")
