"""Type-rule builders shared by the op families."""

from __future__ import annotations

from typing import Any

from ..types import is_bool, is_float, is_int, is_numeric, is_scalar, type_str


def _names(types: tuple[Any, ...]) -> str:
    return ", ".join(type_str(t) for t in types)


def same(category: str, result: str = "same") -> Any:
    """Operands all of one dtype in `category`; result that dtype, or bool (`result="bool"`).

    Categories: "numeric" (ints and floats), "int", "float", "int_or_bool", "real_scalar"
    (bool, ints and floats), "scalar" (any, complex included).
    """
    test = {
        "numeric": is_numeric, "int": is_int, "float": is_float, "scalar": is_scalar,
        "int_or_bool": lambda t: is_int(t) or is_bool(t), "bool": is_bool,
        "real_scalar": _real_scalar,
    }[category]

    def rule(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> Any:
        first = types[0]
        if not all(t is first for t in types) or not test(first):
            raise TypeError(f"operands must be one {category} dtype; got ({_names(types)})")
        return first if result == "same" else _bool()

    return rule


def _real_scalar(t: Any) -> bool:
    return is_scalar(t) and bool(t.kind != "c")


def _bool() -> Any:
    from ... import _dtypes

    return _dtypes.bool


def no_result(types: tuple[Any, ...], attrs: tuple[Any, ...]) -> None:
    return None
