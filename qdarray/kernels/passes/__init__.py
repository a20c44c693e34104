"""IR -> IR passes, one per file, and the pipeline the compiler runs.

- the pipeline of every compile: `scalarize` (vectors and matrices to scalars),
  `resolve_views`, `simplify`, `bounds_checks` (debug mode),
  and for targets that compile code `lower_views` and `lower_adstack`;
- passes reverse mode runs on the kernels it generates: `cse` (common subexpressions),
  `dce` (dead code and unused adstacks), `factor` (linear seeds factored out);
- analyses of lowered kernels for targets that launch grids: `stages` (launches, host
  values, carries) and `flatten` (a parallel nest's flat index space, in IR).

Adding a pass: write `passes/<verb>.py` with a function `verb(kernel) -> kernel` that builds
new nodes (subclass `rewrite.Rewriter`), add it to `pipeline` below, and test it with random
kernels run through the interpreter before and after (tests/kernels/passes/).
"""

from __future__ import annotations

from collections.abc import Callable

from ..ir import KernelIR
from ..verify import verify
from .bounds_checks import bounds_checks
from .lower_adstack import lower_adstack
from .lower_views import lower_views
from .resolve_views import resolve_views
from .scalarize import scalarize
from .simplify import simplify

__all__ = ["bounds_checks", "lower_adstack", "lower_views", "resolve_views", "scalarize",
           "simplify", "pipeline"]


def pipeline(kernel: KernelIR, *, debug: bool, lower: bool) -> KernelIR:
    """The passes every compile runs: vectors and matrices split into scalars; kernel-side
    subviews resolved to windows on parameter
    views (checked in debug mode); simplify; bounds checks in debug mode; for targets that
    compile code (`lower`), views lowered to arrays and the adstack ops to memory ops (after
    the bounds checks: adstack accesses stay within their slices by construction). The
    verifier runs after each pass in debug mode."""
    steps: list[Callable[[KernelIR], KernelIR]] = [
        scalarize, lambda k: resolve_views(k, debug=debug), simplify]
    if debug:
        steps.append(bounds_checks)
    if lower:
        steps += [lower_views, lower_adstack]
    if debug:
        verify(kernel)
    for step in steps:
        kernel = step(kernel)
        if debug:
            verify(kernel)
    return kernel
