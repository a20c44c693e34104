"""qdarray: an Array API namespace on every device, kernels over safe windows, and reverse-mode
autodiff through kernels with data-dependent loops.

Example::

    import qdarray as qd
    x = qd.linspace(0, 1, 5, dtype=qd.float32)
    print(qd.sum(qd.sin(x) * 2 + x))
"""

from __future__ import annotations

import sys as _sys

from ._version import __version__

__array_api_version__ = "2025.12"

from ._array import Array
from ._devices import Device, default_device, get_default_device, set_default_device
from . import backends  # noqa: F401  (registers how devices find their backends)
from ._dtypes import (
    DType,
    bool,
    complex64,
    complex128,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from ._errors import (
    AdStackOverflowError,
    AdStackSizingError,
    AutodiffError,
    BufferViewIndexError,
    DeviceMismatchError,
    DeviceUnavailableError,
    DonatedArrayError,
    JitTraceError,
    KernelIndexError,
    KernelOverflowError,
    KernelSourceError,
    KernelSyntaxError,
    KernelTypeError,
    LoopLimitError,
    QdarrayError,
    TracerBoolConversionError,
    TracerConversionError,
)
from ._creation_functions import (
    arange,
    asarray,
    diag,
    empty,
    empty_like,
    eye,
    full,
    full_like,
    linspace,
    meshgrid,
    ones,
    ones_like,
    tril,
    triu,
    zeros,
    zeros_like,
)
from ._interchange import from_dlpack

# -- BufferView ------------------------------------------------------------------------
from .buffer_view import BufferView

__all__ = [
    "Array", "Device", "DType", "__array_api_version__", "__version__",
    "default_device", "get_default_device", "set_default_device",
    "bool", "complex64", "complex128", "float32", "float64", "int8", "int16", "int32", "int64",
    "uint8", "uint16", "uint32", "uint64",
    "AdStackOverflowError", "AdStackSizingError", "AutodiffError", "BufferViewIndexError",
    "DeviceMismatchError", "DeviceUnavailableError", "KernelIndexError", "KernelOverflowError",
    "KernelSourceError", "LoopLimitError",
    "KernelSyntaxError", "KernelTypeError", "QdarrayError", "DonatedArrayError", "JitTraceError",
    "TracerConversionError", "TracerBoolConversionError",
    "asarray", "empty", "empty_like", "full", "full_like", "ones", "ones_like", "zeros",
    "zeros_like", "from_dlpack", "arange", "eye", "linspace", "meshgrid", "tril", "triu",
    "diag",  # NumPy's, beyond the standard: SciPy calls it on the namespace
    "BufferView",
]

# -- indexing, manipulation, searching, sorting, sets, linear algebra, linalg, fft, info -
from . import fft, linalg
from ._errors import AxisError, LinAlgError, NotDLPackError
from ._indexing import (
    take,
    take_along_axis,
)
from ._info import __array_namespace_info__
from ._linear_algebra_functions import (
    matmul,
    matrix_transpose,
    tensordot,
    vecdot,
)
from ._manipulation_functions import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    concat,
    expand_dims,
    flip,
    moveaxis,
    permute_dims,
    repeat,
    reshape,
    roll,
    squeeze,
    stack,
    tile,
    unstack,
)
from ._searching_functions import (
    argmax,
    argmin,
    count_nonzero,
    nonzero,
    searchsorted,
    where,
)
from ._set_functions import (
    isin,
    unique_all,
    unique_counts,
    unique_inverse,
    unique_values,
)
from ._sorting_functions import (
    argsort,
    sort,
)

__all__ += [
    "AxisError", "LinAlgError", "NotDLPackError", "fft", "linalg", "__array_namespace_info__",
    "take", "take_along_axis",
    "matmul", "matrix_transpose", "tensordot", "vecdot",
    "broadcast_arrays", "broadcast_shapes", "broadcast_to", "concat", "expand_dims", "flip",
    "moveaxis", "permute_dims", "repeat", "reshape", "roll", "squeeze", "stack", "tile",
    "unstack",
    "argmax", "argmin", "count_nonzero", "nonzero", "searchsorted", "where",
    "argsort", "sort",
    "isin", "unique_all", "unique_counts", "unique_inverse", "unique_values",
]

# -- elementwise functions ---------------------------------------------------------------
from ._elementwise_functions import (  # noqa: E402 - one block per section
    abs,
    acos,
    acosh,
    add,
    asin,
    asinh,
    atan,
    atan2,
    atanh,
    bitwise_and,
    bitwise_invert,
    bitwise_left_shift,
    bitwise_or,
    bitwise_right_shift,
    bitwise_xor,
    ceil,
    clip,
    conj,
    copysign,
    cos,
    cosh,
    divide,
    equal,
    exp,
    expm1,
    floor,
    floor_divide,
    greater,
    greater_equal,
    hypot,
    imag,
    isfinite,
    isinf,
    isnan,
    less,
    less_equal,
    log,
    log1p,
    log2,
    log10,
    logaddexp,
    logical_and,
    logical_not,
    logical_or,
    logical_xor,
    maximum,
    minimum,
    multiply,
    negative,
    nextafter,
    not_equal,
    positive,
    pow,
    real,
    reciprocal,
    remainder,
    round,
    sign,
    signbit,
    sin,
    sinh,
    sqrt,
    square,
    subtract,
    tan,
    tanh,
    trunc,
)

__all__ += [
    "abs", "acos", "acosh", "add", "asin", "asinh", "atan", "atan2", "atanh", "bitwise_and",
    "bitwise_invert", "bitwise_left_shift", "bitwise_or", "bitwise_right_shift", "bitwise_xor",
    "ceil", "clip", "conj", "copysign", "cos", "cosh", "divide", "equal", "exp", "expm1", "floor",
    "floor_divide", "greater", "greater_equal", "hypot", "imag", "isfinite", "isinf", "isnan",
    "less", "less_equal", "log", "log10", "log1p", "log2", "logaddexp", "logical_and",
    "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply", "negative",
    "nextafter", "not_equal", "positive", "pow", "real", "reciprocal", "remainder", "round",
    "sign", "signbit", "sin", "sinh", "sqrt", "square", "subtract", "tan", "tanh", "trunc",
]

# -- statistical, utility and data type functions, constants -------------------------------
from ._constants import e, inf, nan, newaxis, pi  # noqa: E402
from ._data_type_functions import (  # noqa: E402
    FInfo,
    IInfo,
    astype,
    can_cast,
    finfo,
    iinfo,
    isdtype,
    result_type,
)
from ._statistical_functions import (  # noqa: E402
    cumulative_prod,
    cumulative_sum,
    max,
    mean,
    min,
    prod,
    std,
    sum,
    var,
)
from ._utility_functions import all, any, diff  # noqa: E402

__all__ += [
    "e", "inf", "nan", "newaxis", "pi",
    "FInfo", "IInfo", "astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
    "cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum", "var",
    "all", "any", "diff",
]

# -- kernels -------------------------------------------------------------------------------
from .kernels import (  # noqa: E402
    atomic_add,
    atomic_max,
    atomic_min,
    cast,
    debug_mode,
    default_float,
    func,
    kernel,
    math,
    ndrange,
    select,
    set_debug,
    set_default_float,
    static,
)
from .kernels import vector_types as types  # noqa: E402  (qd.types.vector, qd.types.matrix)
from .kernels import (  # noqa: E402
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

__all__ += [
    "atomic_add", "atomic_max", "atomic_min", "cast", "debug_mode", "func", "kernel", "math",
    "ndrange", "select", "set_debug", "static", "default_float", "set_default_float", "types",
    "vec2", "vec3", "vec4", "mat2", "mat3", "mat4", "vec2d", "vec3d", "vec4d", "mat2d", "mat3d",
    "mat4d",
]

# -- reverse-mode autodiff -----------------------------------------------------------------
from . import ad  # noqa: E402

__all__ += ["ad"]

# -- whole functions compiled ----------------------------------------------------------------
from .jit import jit  # noqa: E402

__all__ += ["jit"]

# `x.__array_namespace__()` returns this package (the array layer imports nothing above it).
from ._array import register_namespace as _register_namespace  # noqa: E402

_register_namespace(_sys.modules[__name__])
del _register_namespace, _sys
