"""Write generations after a launch, as straight-line code per kernel signature.

Every write to an array's memory bumps its buffer token's `generation` (`_array.Buffer`):
the adstack sizing cache and the tape's checks compare generations to know whether an array
changed. A launcher bumps the tokens of the arrays its kernel writes after each launch;
`compile_bump` writes that walk over the written parameters (and dataclass fields) once per
signature, so a launch runs it without a loop or a call per array.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .._array import Array
from ..buffer_view import BufferView

Path = tuple[int, tuple[str, ...]]


def leaf_expr(index: int, path: tuple[str, ...]) -> str:
    """The Python expression of the argument at (index, field path) of `args`."""
    return "".join([f"args[{index}]"] + [f".{name}" for name in path])


def compile_bump(paths: Sequence[Path]) -> Callable[[Sequence[Any]], None]:
    """`bump(args)`: add one to the generation of each Array or BufferView at `paths`
    (argument index, field path); other arrays (NumPy's) have no token."""
    lines = ["def bump(args):"]
    for k, (index, path) in enumerate(paths):
        lines += [f"    x{k} = {leaf_expr(index, path)}",
                  f"    t = type(x{k})",
                  f"    if t is Array: x{k}._buffer.generation += 1",
                  f"    elif t is BufferView: x{k}._base._buffer.generation += 1"]
    if not paths:
        lines.append("    return None")
    names: dict[str, Any] = {"Array": Array, "BufferView": BufferView}
    exec(compile("\n".join(lines) + "\n", "<qdarray bump>", "exec"), names)  # noqa: S102
    return names["bump"]  # type: ignore[no-any-return]

