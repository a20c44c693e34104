"""Random differentiable kernels (Hypothesis) for checking reverse mode end to end.

Each program keeps three float locals (u, w, s) per thread and updates them in branches,
dynamic loops (bounded by a[i], by constants or by an enclosing loop's variable), while loops
with break, and loops with continue. Updates stay bounded (tanh, sin, cos, convex mixes), so
central differences of the forward kernel are an accurate oracle.
"""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

HEADER = '''import qdarray as qd


@qd.kernel
def prog(x: qd.Array[qd.float64, 1], z: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1],
         y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        u = x[i]
        w = z[i]
        s = 0.0
'''
FOOTER = "        y[i] = u + 0.5 * w + s * s\n"


class _Gen:
    def __init__(self, draw: Any) -> None:
        self.draw = draw
        self.lines: list[str] = []
        self.counter = 0

    def pick(self, options: list[Any]) -> Any:
        return self.draw(st.sampled_from(options))

    def expr(self, names: list[str], depth: int) -> str:
        if depth <= 0 or self.draw(st.integers(0, 2)) == 0:
            return self.pick(names + ["x[i]", "z[i]", "0.5", "-1.25"])
        a = self.expr(names, depth - 1)
        form = self.draw(st.integers(0, 6))
        if form <= 2:
            b = self.expr(names, depth - 1)
            return f"({a} {self.pick(['+', '-', '*'])} {b})"
        if form == 3:
            return f"qd.math.{self.pick(['sin', 'cos', 'tanh'])}({a})"
        if form == 4:
            return f"({a} / (1.0 + {a} * {a}))"
        if form == 5:
            return f"qd.math.exp(-{a} * {a})"
        return f"qd.math.sqrt(1.0 + {a} * {a})"

    def update(self, names: list[str], indent: str) -> None:
        target = self.pick(["u", "w", "s"])
        e = self.expr(names, 2)
        form = self.pick([f"qd.math.tanh({e})", f"0.75 * {target} + 0.25 * qd.math.sin({e})",
                          f"{target} * qd.math.cos({e})"])
        self.lines.append(f"{indent}{target} = {form}")

    def cond(self, names: list[str], ints: list[str]) -> str:
        if ints and self.draw(st.booleans()):
            return f"{self.pick(ints)} % 2 == {self.draw(st.integers(0, 1))}"
        return f"{self.expr(names, 1)} > {self.pick(['0.1', '-0.3', '0.45'])}"

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def statements(self, names: list[str], ints: list[str], indent: str, depth: int,
                   in_loop: bool) -> None:
        for _ in range(self.draw(st.integers(1, 3))):
            kind = self.draw(st.integers(0, 6)) if depth > 0 else 0
            if kind <= 1:
                self.update(names, indent)
            elif kind == 2:
                t = self.name("t")
                self.lines.append(f"{indent}{t} = {self.expr(names, 2)}")
                names = names + [t]
            elif kind == 3:
                self.lines.append(f"{indent}if {self.cond(names, ints)}:")
                self.statements(list(names), ints, indent + "    ", depth - 1, in_loop)
                self.lines.append(f"{indent}else:")
                self.statements(list(names), ints, indent + "    ", depth - 1, in_loop)
            elif kind == 4:
                k = self.name("k")
                bound = self.pick(["a[i]", "3"] + [f"{j} + 1" for j in ints])
                self.lines.append(f"{indent}for {k} in range({bound}):")
                if self.draw(st.booleans()):
                    self.lines.append(f"{indent}    if {self.cond(names, ints + [k])}:")
                    self.lines.append(f"{indent}        {self.pick(['continue', 'break'])}")
                self.statements(list(names), ints + [k], indent + "    ", depth - 1, True)
            elif kind == 5:
                m = self.name("m")
                self.lines.append(f"{indent}{m} = 0")
                self.lines.append(f"{indent}while {m} < {self.draw(st.integers(0, 4))}:")
                self.lines.append(f"{indent}    {m} += 1")
                self.statements(list(names), ints, indent + "    ", depth - 1, True)
                self.lines.append(f"{indent}    if {self.cond(names, ints)}:")
                self.lines.append(f"{indent}        break")
            else:
                self.update(names, indent)
                if in_loop and self.draw(st.booleans()):
                    self.lines.append(f"{indent}if {self.cond(names, ints)}:")
                    self.lines.append(f"{indent}    continue")


@st.composite
def program_sources(draw: Any) -> str:
    """The source of a module defining kernel `prog(x, z, a, y)`."""
    gen = _Gen(draw)
    gen.statements(["u", "w", "s"], [], " " * 8, 3, False)
    return HEADER + "\n".join(gen.lines) + "\n" + FOOTER


def load_program(source: str, directory: Path) -> Any:
    """Write `source` to a module file (kernels need one) and return its kernel."""
    name = "adprog_" + hashlib.sha256(source.encode()).hexdigest()[:16]
    path = directory / f"{name}.py"
    if not path.exists():
        path.write_text(source)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    sys.modules[name] = module
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.prog
