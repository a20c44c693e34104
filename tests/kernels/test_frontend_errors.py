"""Compile errors: exact messages with file, line, source line, caret and what to do instead."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest

import qdarray as qd

FILE = __file__
with open(FILE) as _f:
    _LINES = _f.read().splitlines()


def line_of(text: str) -> int:
    """The line number of the one source line containing `text` (a `# marker: ...` comment
    when `text` is a marker)."""
    key = f"# {text}" if text.startswith("marker:") else text
    hits = [n for n, line in enumerate(_LINES, 1) if key in line]
    assert len(hits) == 1, (text, hits)
    return hits[0]


def where(func: str, text: str, caret: str) -> str:
    """The location part of a message: file, line, the stripped source line, the caret."""
    n = line_of(text)
    src = _LINES[n - 1].strip()
    start = src.index(caret)
    return (f'  File "{FILE}", line {n}, in {func}:\n    {src}\n'
            f"    {' ' * start}{'^' * len(caret)}")


def compile_error(kern, *args):
    with pytest.raises((qd.KernelSyntaxError, qd.KernelTypeError)) as info:
        kern(*args)
    return info.value


F32 = np.zeros(3, np.float32)
I32 = np.zeros(3, np.int32)


@qd.func
def matmul_helper(x):
    return x @ 2  # marker: matmul


@qd.kernel
def calls_matmul(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        x[i] = matmul_helper(x[i])  # marker: call matmul


def test_error_inside_func_shows_the_call_stack():
    err = compile_error(calls_matmul, F32)
    assert isinstance(err, qd.KernelSyntaxError) and isinstance(err, SyntaxError)
    assert str(err) == (
        "The @ operator takes vectors and matrices in kernels; got a float32 value.\n"
        + where("matmul_helper", "marker: matmul", "x @ 2") + "\n"
        + f"  called from calls_matmul ({FILE}:{line_of('marker: call matmul')})\n"
        "Use * for scalars; build vectors and matrices with qd.vec3(...), qd.mat3(...) "
        "(see docs/vectors.md).")


@qd.kernel
def maybe_unassigned(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        if x[i] > 0:  # marker: the if
            t = 1.0
        x[i] = t  # marker: use t


def test_use_of_a_conditionally_assigned_local():
    err = compile_error(maybe_unassigned, F32)
    assert str(err) == (
        "'t' may be used before it is assigned: it is assigned on only some paths through the "
        f"if at line {line_of('marker: the if')}.\n"
        + where("maybe_unassigned", "marker: use t", "t") + "\n"
        "Try assigning t before that statement, on every path.")


@qd.kernel
def float_into_int(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * 0.5  # marker: float into int


def test_store_that_changes_kind_is_a_type_error():
    err = compile_error(float_into_int, I32)
    assert isinstance(err, qd.KernelTypeError) and isinstance(err, TypeError)
    assert str(err) == (
        "An element of array 'x' has type int32, but the value has type float64, and converting "
        "it changes its kind.\n"
        + where("float_into_int", "marker: float into int", "x[i]") + "\n"
        "Use int(...) to convert explicitly.")


@qd.kernel
def outer_local(x: qd.Array[qd.int32, 1]):
    s = 0
    for i in range(x.shape[0]):
        s = s + x[i]  # marker: outer local


def test_assigning_an_outer_local_in_the_parallel_loop():
    err = compile_error(outer_local, I32)
    assert str(err) == (
        "'s' is defined outside the parallel loop, so threads cannot assign it (the threads run "
        "in no particular order).\n"
        + where("outer_local", "marker: outer local", "s") + "\n"
        "Use a new local inside the loop, or accumulate into an array element with += (atomic), "
        "e.g. out[0] += v.")


@qd.kernel
def literal_overflow(x: qd.Array[qd.int8, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] + 300  # marker: overflow


def test_literal_that_does_not_fit():
    err = compile_error(literal_overflow, np.zeros(3, np.int8))
    assert str(err) == (
        "The constant 300 does not fit in int8.\n"
        + where("literal_overflow", "marker: overflow", "x[i] + 300") + "\n"
        "Use a value in range, or cast the other operand to a wider type, e.g. qd.int64(x).")


@qd.kernel
def parallel_break(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        if x[i] > 0:
            break  # marker: parallel break


def test_break_in_the_parallel_loop():
    err = compile_error(parallel_break, I32)
    assert str(err) == (
        "'break' is not allowed in the parallel loop: its iterations are threads that run in no "
        "particular order.\n"
        + where("parallel_break", "marker: parallel break", "break") + "\n"
        "Use 'continue' to end this thread's iteration, or an if statement.")


@qd.kernel
def uses_list(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        y = [1, 2]  # marker: list
        x[i] = y[0]


@qd.kernel
def uses_with(x: qd.Array[qd.int32, 1]):
    with open("f"):  # marker: with
        pass


@qd.kernel
def uses_print(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        print(x[i])  # marker: print


@qd.kernel
def uses_return(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        return x[i]  # marker: return


@qd.kernel
def negative_index(x: qd.Array[qd.int32, 1]):
    x[-1] = 3  # marker: negative


@qd.kernel
def float_index(x: qd.Array[qd.int32, 1], f: float):
    x[f] = 3  # marker: float index


@qd.kernel
def too_many_indices(x: qd.Array[qd.int32, 1]):
    x[0, 1] = 3  # marker: too many


@qd.kernel
def slicing(x: qd.Array[qd.int32, 1]):
    x[0] = x[1:2]  # marker: slice


@qd.kernel
def assigns_loop_var(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        i = 2  # noqa: F841  # marker: loop var


@qd.kernel
def int_and(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        y = x[i] and True  # marker: int and
        x[i] = y


@qd.kernel
def float_range(x: qd.Array[qd.int32, 1]):
    for i in range(2.5):  # noqa: B007  # marker: float range
        x[0] = 1


@qd.kernel
def unknown_name(x: qd.Array[qd.int32, 1]):
    x[0] = no_such_thing  # noqa: F821  # marker: unknown


GLOBAL_ARRAY = np.zeros(3)


@qd.kernel
def captures_array(x: qd.Array[qd.float64, 1]):
    x[0] = GLOBAL_ARRAY[0]  # marker: capture


@qd.kernel
def static_of_runtime(x: qd.Array[qd.int32, 1]):
    count = x[0]
    for k in qd.static(range(count)):  # marker: static runtime
        x[k] = 1


@qd.kernel
def static_break(x: qd.Array[qd.int32, 1]):
    for _k in qd.static(range(3)):
        break  # marker: static break


@qd.func
def recursive(n):
    return recursive(n - 1)  # marker: recursion


@qd.kernel
def calls_recursive(x: qd.Array[qd.int32, 1]):
    x[0] = recursive(3)


@qd.kernel
def inner_kernel(x: qd.Array[qd.int32, 1]):
    x[0] = 1


@qd.kernel
def calls_kernel(x: qd.Array[qd.int32, 1]):
    inner_kernel(x)  # marker: kernel call


@qd.func
def some_paths(v):
    if v > 0:
        return 1
    v = 2  # marker: no final return


@qd.kernel
def calls_some_paths(x: qd.Array[qd.int32, 1]):
    x[0] = some_paths(x[0])


@qd.kernel
def changes_local_type(x: qd.Array[qd.int32, 1]):
    for i in range(x.shape[0]):
        acc = 0
        acc = acc + x[i] * 0.5  # marker: local type
        x[i] = acc


@qd.kernel
def float_literal_overflow(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        x[i] = x[i] * 1e39  # marker: float overflow


CASES = [
    (float_literal_overflow, "marker: float overflow", "x[i] * 1e39",
     "The constant 1e+39 is out of range for float32 (it would become infinity).",
     "Use a value in range, or compute in float64: qd.float64(x)."),
    (uses_list, "marker: list", "[1, 2]", "List expressions are not supported in kernels.",
     "Use a tuple (a, b) for compile-time sequences; kernels have no lists."),
    (uses_with, "marker: with", None, "With statements are not supported in kernels.",
     "Kernels have no context managers; write the statements directly."),
    (uses_print, "marker: print", "print(x[i])", "print() is not supported in kernels.",
     "Write values into an output array and print them after the launch."),
    (uses_return, "marker: return", "return x[i]",
     "Kernels cannot return values or return early.",
     "Write results into an output array argument; use 'continue' to end a thread's "
     "iteration early."),
    (negative_index, "marker: negative", "-1",
     "Negative index -1: kernels do not count from the end.",
     "Use x[x.shape[0] - k] to index from the end."),
    (float_index, "marker: float index", "f",
     "Array indices must be integers; got a float64 value.",
     "Use int(...) to convert the index."),
    (too_many_indices, "marker: too many", "0, 1",
     "array 'x' has 1 dimension but is indexed with 2.", "Use at most 1 index."),
    (slicing, "marker: slice", "1:2",
     "Slicing array 'x' is not supported in kernels; only BufferView values can be sliced.",
     "Index one element at a time (x[i]), or pass a 1-D window as a qd.BufferView[dtype] "
     "parameter and slice that (v[a:b])."),
    (assigns_loop_var, "marker: loop var", "i",
     f"'i' is the variable of the loop at line {line_of('marker: loop var') - 1}; it cannot be "
     "assigned in the loop body.", "Try a new local name for the value."),
    (int_and, "marker: int and", "x[i]",
     "`and` / `or` take bool operands in kernels; got a int32 value.",
     "Use a comparison such as (x != 0)."),
    (float_range, "marker: float range", "2.5",
     "A range() bound must be an integer; got the constant 2.5.", "Use int(...) to convert it."),
    (unknown_name, "marker: unknown", "no_such_thing", "Name 'no_such_thing' is not defined.",
     "Check the spelling, or pass the value as a kernel argument."),
    (captures_array, "marker: capture", "GLOBAL_ARRAY",
     "'GLOBAL_ARRAY' is an array captured from Python; kernels only see arrays passed as "
     "arguments.", "Pass it as a kernel argument."),
    (static_of_runtime, "marker: static runtime", "count",
     "qd.static(...) needs compile-time values, but 'count' is a value computed when the kernel "
     "runs.", "Use a Python constant, a global, or a value derived from array shapes' "
     "ndim/dtype."),
    (static_break, "marker: static break", "break",
     "'break' in a qd.static loop is not supported (the loop is unrolled when the kernel "
     "compiles).", "Use if statements on the static loop variable instead."),
    (calls_kernel, "marker: kernel call", "inner_kernel(x)",
     "Kernels cannot call kernels ('inner_kernel').",
     "Decorate the helper with @qd.func instead of @qd.kernel."),
    (changes_local_type, "marker: local type", "acc",
     "Local 'acc' has type int64, but the value has type float64, and converting it narrows or "
     "changes its kind.", "Use int(...) to convert explicitly."),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c[0].__name__)
def test_rejected_constructs(case):
    kern, marker, caret, what, hint = case
    args = (I32, 1.5) if kern is float_index else (
        np.zeros(3) if kern is captures_array else F32 if kern is float_literal_overflow
        else I32,)
    err = compile_error(kern, *args)
    text = str(err)
    first, location = text.split("\n", 1)
    assert first == what
    assert text.endswith("\n" + hint)
    n = line_of(marker)
    src = _LINES[n - 1].strip()
    assert location.startswith(f'  File "{FILE}", line {n}, in {kern.__name__}:\n    {src}\n')
    caret_line = location.split("\n")[2]
    if caret is not None:
        start = src.index(caret)
        assert caret_line == f"    {' ' * start}{'^' * len(caret)}"
    else:
        assert re.fullmatch(r"    \^+", caret_line)


def test_recursion_is_rejected_at_the_recursive_call():
    err = compile_error(calls_recursive, I32)
    assert str(err).startswith(
        "func 'recursive' calls itself; recursion is not supported in kernels.\n"
        + where("recursive", "marker: recursion", "recursive(n - 1)"))
    assert str(err).endswith("\nUse a loop.")


def test_func_without_a_final_return():
    err = compile_error(calls_some_paths, I32)
    assert str(err).startswith(
        "func 'some_paths' returns a value on some paths but does not end with a return.\n"
        + where("some_paths", "marker: no final return", "v = 2"))


# -- type errors at the call ----------------------------------------------------------------


@qd.kernel
def typed(x: qd.Array[qd.float32, 1], n: qd.int32, flag: bool):
    for i in range(n):
        x[i] = 1.0 if flag else 0.0


@pytest.mark.parametrize("args,message", [
    ((np.zeros(3, np.int32), 1, True),
     "typed() argument 'x': expected qd.Array[float32, 1], got Array[int32, 1]. Use "
     "x.astype(dtype) or pass an array of the expected dtype and ndim."),
    ((np.zeros((3, 2), np.float32), 1, True),
     "typed() argument 'x': expected qd.Array[float32, 1], got Array[float32, 2]. Use "
     "x.astype(dtype) or pass an array of the expected dtype and ndim."),
    ((F32, 1.5, True),
     "typed() argument 'n': expected qd.int32, got Python float 1.5. Use a value that converts "
     "to qd.int32 without changing kind."),
    ((F32, 1, 3),
     "typed() argument 'flag': expected bool, got Python int 3. Use a value that converts to "
     "bool without changing kind."),
    ((F32, 1, True, 4), "typed(): too many positional arguments."),
    ((F32, "one", True),
     "typed() argument 'n' has type str, which kernels do not take. Use a qd.Array, a "
     "qd.BufferView, a NumPy or DLPack array, a Python or NumPy scalar, or a frozen dataclass "
     "of these."),
])
def test_argument_type_errors_name_the_parameter(args, message):
    with pytest.raises(qd.KernelTypeError) as info:
        typed(*args)
    assert str(info.value) == message


def test_out_of_range_typed_scalar():
    with pytest.raises(qd.KernelTypeError, match=r"argument 'n': 3000000000 does not fit in "
                                                 r"int32"):
        typed(F32, 3_000_000_000, True)


@dataclass
class Mutable:
    x: np.ndarray


@qd.kernel
def takes_struct(p):
    p.x[0] = 1.0


def test_non_frozen_dataclass():
    with pytest.raises(qd.KernelTypeError, match=r"takes_struct\(\) argument 'p' is a Mutable "
                                                 r"dataclass that is not frozen\. Use "
                                                 r"@dataclass\(frozen=True\)"):
        takes_struct(Mutable(np.zeros(2)))


def test_complex_arrays_are_rejected():
    with pytest.raises(qd.KernelTypeError, match="has dtype complex128, which kernels do not "
                                                 "support"):
        takes_struct(np.zeros(2, complex))


def test_funcs_cannot_be_called_from_python():
    with pytest.raises(qd.KernelSyntaxError, match="can only be called from a @qd.kernel"):
        matmul_helper(1.0)
