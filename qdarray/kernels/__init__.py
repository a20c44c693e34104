"""The kernel compiler: `@qd.kernel`, `@qd.func` and the kernel language.

Pipeline: frontend (Python AST -> typed IR, `frontend/`), passes (`passes/`), a code
generator per target (`codegen/`), the compile cache (`cache.py`) and the launcher
(`launch.py`). `interp.py` runs the IR directly and defines what every op means.
"""

from __future__ import annotations

from . import qdmath as math
from .cache import cache_stats
from .debug import debug_mode, set_debug
from .func import Func, func
from .kernel import Kernel, kernel
from .language import atomic_add, atomic_max, atomic_min, cast, ndrange, select, static
from .options import default_float, set_default_float

__all__ = [
    "Func", "Kernel", "func", "kernel", "math", "atomic_add", "atomic_max", "atomic_min",
    "cast", "ndrange", "select", "static", "debug_mode", "set_debug", "cache_stats",
    "default_float", "set_default_float",
]
