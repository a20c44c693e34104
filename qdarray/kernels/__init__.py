"""The kernel compiler: `@qd.kernel`, `@qd.func` and the kernel language.

Pipeline: frontend (Python AST -> typed IR, `frontend/`), passes (`passes/`), a code
generator per target (`codegen/`), the compile cache (`cache.py`) and the launcher
(`launch.py`). `interp.py` runs the IR directly and defines what every op means.
"""

from __future__ import annotations

from .._array import Array
from ..buffer_view import BufferView
from . import qdmath as math
from .cache import cache_stats
from .debug import debug_mode, set_debug
from .kernel import Func, Kernel, func, kernel
from .language import atomic_add, atomic_max, atomic_min, cast, ndrange, select, static
from .types import array_annotation, view_annotation

__all__ = [
    "Func", "Kernel", "func", "kernel", "math", "atomic_add", "atomic_max", "atomic_min",
    "cast", "ndrange", "select", "static", "debug_mode", "set_debug", "cache_stats",
]

# `qd.Array[dtype, ndim]` and `qd.BufferView[dtype]` are kernel annotations. The classes live
# in the array namespace; when they do not define subscription themselves, it is provided
# here (the annotation objects are the kernel compiler's).
if "__class_getitem__" not in Array.__dict__:
    Array.__class_getitem__ = classmethod(lambda cls, params: array_annotation(params))  # type: ignore[attr-defined]
if "__class_getitem__" not in BufferView.__dict__:
    BufferView.__class_getitem__ = classmethod(lambda cls, params: view_annotation(params))  # type: ignore[attr-defined]
