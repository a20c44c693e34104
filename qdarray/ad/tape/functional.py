"""The functional form of reverse mode: `qd.ad.grad`, `qd.ad.value_and_grad`, and
`qd.ad.stop_gradient`, over `qd.ad.Tape`.

`qd.ad.grad(f)(x)` runs `f` on a stand-in for `x` that shares its memory and has a fresh
gradient companion, inside a tape, and returns the gradient of `f`'s one-element result with
respect to it, as `jax.grad` does; the arguments' own `.grad` companions are not touched.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

from ... import _dtypes
from ..._array import Array
from ..._autodiff import Node, Rule, current, record
from ..._creation_functions import asarray, zeros_like
from .namespace_records import fit
from .tape import Tape

# The gradient functions `grad` and `value_and_grad` made: wrapper -> (the function it
# differentiates, a way to make the same wrapper of another function). `qd.jit` of a
# gradient function compiles the function it differentiates (qdarray/jit/function.py).
GRADIENTS: weakref.WeakKeyDictionary[Callable[..., Any], tuple[Callable[..., Any], Callable[
    [Callable[..., Any]], Callable[..., Any]]]] = weakref.WeakKeyDictionary()


def stop_gradient(x: Array) -> Array:
    """`x` as a constant: an array sharing its memory through which no gradient flows, inside
    or outside a tape (JAX's `stop_gradient`, PyTorch's `detach`).

    Example::

        w = qd.ad.stop_gradient(x) * 2.0     # w takes no part in x's gradient
    """
    if type(x) is not Array:
        raise TypeError(f"stop_gradient expects a qdarray Array; got {type(x).__name__}.")
    return Array._new(x._data, x._device, x._buffer)


def _leaf(value: Any, index: int, func: str, tape: Tape) -> Array:
    """A stand-in for argument `index`: its memory, a new zero gradient companion (the
    tape's own)."""
    x = _stand_in(value, index, func)
    comp = zeros_like(x)
    x._grad = comp
    tape.owned.add(comp._buffer)
    return x


_ARGUMENT = Rule("an argument of qd.ad.grad", {})


def _node_leaf(value: Any, index: int, func: str, tape: Tape) -> Array:
    """A stand-in for argument `index` whose cotangent accumulates on a node of `tape`
    (computed by recorded operations, which enclosing tapes differentiate); to them the
    stand-in is a view of the argument."""
    x = _stand_in(value, index, func)
    if type(value) is Array:
        record("view", x, (value,), {"fn": _same})
    node = Node(tape, _ARGUMENT, (), [], (), (), -1, None, x._buffer.generation, x.shape,
                x._dtype)
    node.up = x._node
    x._node = node
    return x


def _same(native: Any) -> Any:
    return native


def _gradient(leaf: Array) -> Array:
    """The gradient a stand-in received."""
    if leaf._grad is not None:
        return leaf._grad
    node = leaf._node
    g: Array | None = node.companion if node.companion is not None else node.cot
    if g is None:
        return zeros_like(leaf)
    if g.shape != leaf.shape or g._dtype is not leaf._dtype:
        g = fit(g, leaf.shape, leaf._dtype)
    return g


def _stand_in(value: Any, index: int, func: str) -> Array:
    if type(value) is Array:
        x = Array._new(value._data, value._device, value._buffer)
    else:
        x = asarray(value)
    if x._dtype not in _dtypes.FLOATING_DTYPES:
        raise TypeError(
            f"{func} differentiates floating-point arguments; argument {index} has dtype "
            f"{x._dtype.name}. Use qd.astype(x, qd.float64) (or a float value) for it, or leave "
            "it out of argnums.")
    return x


def value_and_grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
                   has_aux: bool = False) -> Callable[..., Any]:
    """A function that returns `f`'s value and its gradient with respect to the arguments
    `argnums`, as `jax.value_and_grad` does.

    Args:
        f: a function of arrays returning a one-element floating-point array (or, with
            `has_aux`, a pair of it and anything else), written with qdarray's namespace and
            kernels.
        argnums: the position, or positions, of the arguments to differentiate.
        has_aux: `f` returns `(value, aux)`; the result is then `((value, aux), grads)`.

    Returns:
        a function of `f`'s arguments returning `(value, gradient)`: the gradient is an array
        shaped like its argument (a tuple of them when `argnums` is a sequence). Arrays,
        NumPy arrays and Python floats are accepted; a result that does not depend on an
        argument gives zeros for it.

    Raises:
        TypeError: an argument in `argnums` is not floating-point; `f` returns something
            other than a one-element real floating-point array (a complex one included, as
            with `jax.grad`), or, with `has_aux`, something other than a pair.
        ValueError: `argnums` names a missing argument, or one argument twice.

    Example::

        def loss(w, x):
            return qd.sum((x @ w - 1.0) ** 2)

        value, g = qd.ad.value_and_grad(loss)(w, x)
    """
    single = isinstance(argnums, int)
    positions = (argnums,) if isinstance(argnums, int) else tuple(argnums)
    name = getattr(f, "__name__", "f")

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        given = list(args)
        for p in positions:
            if not -len(given) <= p < len(given):
                raise ValueError(
                    f"argnums={argnums!r} names argument {p}, but {name} was called with "
                    f"{len(given)} positional arguments.")
        seen = [p % len(given) for p in positions]
        for k, p in enumerate(seen):
            if p in seen[:k]:
                raise ValueError(
                    f"argnums={argnums!r} names argument {p} twice; {name} gets one stand-in "
                    "per argument, so the second would receive no gradient. Name each "
                    "argument once.")
        tape = Tape()
        # Inside a recording tape (a gradient that is differentiated again), the arguments'
        # cotangents live on nodes, which the enclosing tape sees computed; else companions.
        nested = current() is not None
        leaves = []
        for p in positions:
            leaf = (_node_leaf if nested else _leaf)(given[p], p, "qd.ad.grad", tape)
            given[p] = leaf
            leaves.append(leaf)
        with tape:
            out = f(*given, **kwargs)
        if has_aux and not (isinstance(out, tuple | list) and len(out) == 2):
            raise TypeError(
                f"qd.ad.grad(..., has_aux=True) needs {name} to return a pair (value, aux); "
                f"got {type(out).__name__}. Return a tuple, or leave has_aux out.")
        value, aux = out if has_aux else (out, None)
        if type(value) is not Array or value.size != 1 or value.dtype.kind != "f":
            what = (f"shape {value.shape}, dtype {value.dtype.name}" if type(value) is Array
                    else type(value).__name__)
            raise TypeError(
                f"qd.ad.grad needs {name} to return a one-element floating-point array; got "
                f"{what}. Use qd.sum(...) (qd.real(...) of a complex value) or qd.ad.Tape "
                "with backward(y, grad=...) for other results.")
        if tape.tracked(value):
            tape.backward(value)
        grads = tuple(_gradient(leaf) for leaf in leaves)
        result = grads[0] if single else grads
        return ((value, aux), result) if has_aux else (value, result)

    wrapper.__name__ = f"value_and_grad({name})"
    GRADIENTS[wrapper] = (f, lambda g: value_and_grad(g, argnums, has_aux=has_aux))
    return wrapper


def grad(f: Callable[..., Any], argnums: int | Sequence[int] = 0, *,
         has_aux: bool = False) -> Callable[..., Any]:
    """A function that returns the gradient of `f` with respect to the arguments `argnums`,
    as `jax.grad` does (see `value_and_grad` for the arguments).

    Example::

        g = qd.ad.grad(lambda x: qd.sum(qd.sin(x) * x))(x)     # cos(x) * x + sin(x)
    """
    both = value_and_grad(f, argnums, has_aux=has_aux)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if has_aux:
            (_, aux), g = both(*args, **kwargs)
            return g, aux
        return both(*args, **kwargs)[1]

    wrapper.__name__ = f"grad({getattr(f, '__name__', 'f')})"
    GRADIENTS[wrapper] = (f, lambda g: grad(g, argnums, has_aux=has_aux))
    return wrapper
