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
from .vector_types import (
    mat2,
    mat2d,
    mat3,
    mat3d,
    mat4,
    mat4d,
    vec2,
    vec2d,
    vec3,
    vec3d,
    vec4,
    vec4d,
)

__all__ = [
    "Func", "Kernel", "func", "kernel", "math", "atomic_add", "atomic_max", "atomic_min",
    "cast", "ndrange", "select", "static", "debug_mode", "set_debug", "cache_stats",
    "default_float", "set_default_float",
    "vec2", "vec3", "vec4", "mat2", "mat3", "mat4", "vec2d", "vec3d", "vec4d", "mat2d", "mat3d",
    "mat4d",
]
