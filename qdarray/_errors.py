"""Every exception qdarray raises beyond the builtins, each also an instance of a builtin.

Catching the builtin (`TypeError`, `IndexError`, ...) keeps working for code written against
NumPy; catching `QdarrayError` catches everything qdarray-specific.
"""

from __future__ import annotations

from numpy import linalg as _np_linalg


class QdarrayError(Exception):
    """Base class of qdarray's own exceptions."""


class KernelSyntaxError(QdarrayError, SyntaxError):
    """A kernel uses Python outside the kernel language (raised when it compiles)."""

    def __str__(self) -> str:
        # SyntaxError.__str__ appends "(file, line N)" when filename is set; the message
        # already carries the location with the source line and caret.
        return str(self.msg) if self.msg is not None else ""


class KernelTypeError(QdarrayError, TypeError):
    """A kernel's types do not check: at compile time, or an argument at the call."""


class KernelOverflowError(KernelTypeError, OverflowError):
    """A scalar argument does not fit the integer type of its kernel parameter (NumPy raises
    OverflowError for the same conversion)."""


class KernelIndexError(QdarrayError, IndexError):
    """An array access out of bounds, found by a kernel running in debug mode."""


class BufferViewIndexError(KernelIndexError):
    """A BufferView access or subview out of its window, found in debug mode."""


class DeviceMismatchError(QdarrayError, ValueError):
    """Arrays from different devices were combined."""


class DeviceUnavailableError(QdarrayError, RuntimeError):
    """An array was unpickled for a device that is not present in this process."""


class KernelSourceError(QdarrayError, OSError):
    """A kernel's or func's source is unavailable, or its file no longer holds its code
    (edited after import)."""


class AutodiffError(QdarrayError, NotImplementedError):
    """Reverse mode cannot differentiate something (an op without a derivative, ...)."""


class AdStackOverflowError(QdarrayError, RuntimeError):
    """An adstack push went beyond its capacity; nothing was written out of bounds."""


class AdStackSizingError(QdarrayError, RuntimeError):
    """A loop-bound array changed between a forward launch and its reverse."""


class LoopLimitError(QdarrayError, RuntimeError):
    """A device's driver ended a kernel's loops early (Mesa's llvmpipe stops the loops of a
    batch of threads after 65,535 iterations in all): the launch's results are wrong and
    are not returned. Split the work over more threads, or use another device."""


class AxisError(QdarrayError, ValueError, IndexError):
    """An axis argument outside [-ndim, ndim), or repeated where axes must be unique.

    Like NumPy's AxisError it is both a ValueError and an IndexError, so code catching either
    (the standard asks for IndexError in some functions) keeps working.
    """


class LinAlgError(QdarrayError, _np_linalg.LinAlgError):
    """A linear algebra routine failed (a singular matrix, no convergence, ...).

    Also NumPy's `numpy.linalg.LinAlgError` (and so a ValueError), which existing code catches.
    """


class NotDLPackError(QdarrayError, TypeError, AttributeError):
    """`from_dlpack` got an object without `__dlpack__` and `__dlpack_device__`.

    The standard asks for an AttributeError, NumPy raises a TypeError: it is both.
    """


class JitTraceError(QdarrayError, TypeError):
    """`qd.jit` cannot trace what the function did: a call it cannot replay exactly, an
    argument it cannot key on, or a shape that depends on values. The message names the
    function's line and what to do instead."""


class TracerConversionError(JitTraceError):
    """A value traced by `qd.jit` was converted to a Python value (`float(x)`, `int(x)`,
    `x.item()`, `x.tolist()`, an index, a host export): it is not known when the function is
    compiled, so the compiled program could not follow it."""


class TracerBoolConversionError(TracerConversionError):
    """`bool(x)` of a value traced by `qd.jit`: Python control flow (`if`, `while`, `and`)
    on it; use `qd.where`, a static argument or a kernel."""


class DonatedArrayError(QdarrayError, RuntimeError):
    """An array donated to a `qd.jit` function (`donate_argnums`) was used after the call:
    its memory may hold one of the call's results."""
