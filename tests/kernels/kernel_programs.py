"""Random small kernels (Hypothesis), for testing passes and code generators against the
interpreter.

Programs use only operations with exactly one correct result (IEEE arithmetic, wrapping
integer arithmetic, sqrt, floor, min, max, comparisons, control flow), so every backend
must agree bit for bit. Each program reads four typed arrays and a view, keeps a float64
and an int64 accumulator, and writes them per thread.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

import numpy as np
from hypothesis import strategies as st

HEADER = '''import qdarray as qd


@qd.kernel
def prog(a: qd.Array[qd.int32, 1], b: qd.Array[qd.int64, 1], c: qd.Array[qd.float32, 1],
         d: qd.Array[qd.float64, 1], v: qd.BufferView[qd.float64], n: int,
         out: qd.Array[qd.float64, 2]):
    for i in range(a.shape[0]):
        x0 = a[i]
        x1 = b[i]
        x2 = c[i]
        x3 = d[i]
        x4 = v[i]
        acc = 0.0
        cnt = 0
'''


class _Gen:
    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.kinds = {"x0": "i", "x1": "i", "x2": "f", "x3": "f", "x4": "f", "i": "i", "n": "i"}
        self.lines: list[str] = []
        self.counter = 0

    def pick(self, options: list[Any]) -> Any:
        return self.draw(st.sampled_from(options))

    def terminal(self, names: dict[str, str]) -> tuple[str, str]:
        choice = self.draw(st.integers(0, 5))
        if choice == 0:
            return str(self.draw(st.integers(-5, 9))), "i"
        if choice == 1:
            return repr(self.pick([0.5, -1.25, 3.0, 1e-3, 2.0])), "f"
        name = self.pick(sorted(names))
        return name, names[name]

    def expr(self, names: dict[str, str], depth: int) -> tuple[str, str]:
        if depth <= 0 or self.draw(st.integers(0, 3)) == 0:
            return self.terminal(names)
        form = self.draw(st.integers(0, 7))
        a, ka = self.expr(names, depth - 1)
        if form <= 2:
            b, kb = self.expr(names, depth - 1)
            kind = "f" if "f" in (ka, kb) else "i"
            ops = ["+", "-", "*", "/"] if kind == "f" else ["+", "-", "*", "//", "%"]
            op = self.pick(ops)
            return f"({a} {op} {b})", ("f" if op == "/" else kind)
        if form == 3:
            b, kb = self.expr(names, depth - 1)
            fn = self.pick(["min", "max"])
            return f"{fn}({a}, {b})", "f" if "f" in (ka, kb) else "i"
        if form == 4:
            return f"(-{a})", ka
        if form == 5:
            return (f"qd.math.sqrt(abs({a}))", "f") if ka == "f" else (f"abs({a})", "i")
        if form == 6:
            c = self.cond(names, depth - 1)
            b, kb = self.expr(names, depth - 1)
            return f"({a} if {c} else {b})", "f" if "f" in (ka, kb) else "i"
        return (f"qd.math.floor({a})", "f") if ka == "f" else (f"float({a})", "f")

    def cond(self, names: dict[str, str], depth: int) -> str:
        a, _ = self.expr(names, depth)
        b, _ = self.expr(names, depth)
        op = self.pick(["<", "<=", ">", ">=", "==", "!="])
        return f"{a} {op} {b}"

    def update(self, names: dict[str, str], indent: str) -> None:
        e, kind = self.expr(names, 2)
        if kind == "i" and self.draw(st.booleans()):
            self.lines.append(f"{indent}cnt = cnt + {e}")
        else:
            self.lines.append(f"{indent}acc = acc + {e}")

    def statements(self, names: dict[str, str], indent: str, depth: int) -> None:
        for _ in range(self.draw(st.integers(1, 3))):
            kind = self.draw(st.integers(0, 5)) if depth > 0 else 0
            if kind <= 1:
                self.update(names, indent)
            elif kind == 2:
                name = f"t{self.counter}"
                self.counter += 1
                e, k = self.expr(names, 2)
                self.lines.append(f"{indent}{name} = {e}")
                names[name] = k
            elif kind == 3:
                self.lines.append(f"{indent}if {self.cond(names, 1)}:")
                self.statements(dict(names), indent + "    ", depth - 1)
                self.lines.append(f"{indent}else:")
                self.statements(dict(names), indent + "    ", depth - 1)
            elif kind == 4:
                k = f"k{self.counter}"
                self.counter += 1
                self.lines.append(f"{indent}for {k} in range({self.draw(st.integers(0, 4))}):")
                inner = dict(names, **{k: "i"})
                self.statements(inner, indent + "    ", depth - 1)
            else:
                w = f"w{self.counter}"
                self.counter += 1
                self.lines.append(f"{indent}{w} = 0")
                self.lines.append(f"{indent}while {w} < {self.draw(st.integers(0, 3))}:")
                self.lines.append(f"{indent}    {w} += 1")
                self.statements(dict(names), indent + "    ", depth - 1)
                if self.draw(st.booleans()):
                    self.lines.append(f"{indent}    if {self.cond(names, 0)}:")
                    self.lines.append(f"{indent}        break")


@st.composite
def kernel_sources(draw: Any) -> str:
    """The source of a random module defining kernel `prog`."""
    gen = _Gen(draw)
    gen.statements(dict(gen.kinds), " " * 8, 2)
    body = "\n".join(gen.lines)
    return HEADER + body + "\n        out[i, 0] = acc\n        out[i, 1] = float(cnt)\n"


def load_kernel(source: str, directory: Path, name: str = "prog") -> Any:
    """Write `source` to a module file (kernels need one) and return its kernel `name`."""
    kernel_name = name
    name = "prog_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    path = directory / f"{name}.py"
    if not path.exists():
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return getattr(module, kernel_name)


def arguments(seed: int, n: int = 9) -> tuple[Any, ...]:
    """Inputs for `prog` (with some zeros, negatives and extremes), and its output array."""
    import qdarray as qd

    rng = np.random.default_rng(seed)
    a = rng.integers(-20, 20, n).astype(np.int32)
    a[0] = np.iinfo(np.int32).max
    b = rng.integers(-(2**40), 2**40, n)
    b[1] = 0
    c = (rng.normal(size=n) * 4).astype(np.float32)
    c[2] = 0.0
    d = rng.normal(size=n) * 100
    base = qd.asarray(rng.normal(size=n + 5))
    view = qd.BufferView(base, offset=3, size=n)
    return a, b, c, d, view, int(rng.integers(-3, 4)), np.zeros((n, 2))
