"""Reverse-mode autodiff of kernels (`qd.ad`).

- `kernel.grad(*args)` runs the reverse of a kernel with the same arguments, accumulating into
  the `.grad` of every argument created with `requires_grad=True`;
- `qd.ad.Tape(loss=y)` records the kernel launches of a block and, on exit, seeds `y.grad`
  with 1 and runs their reverses in reverse order.

Loop-carried locals of dynamic loops live on per-thread adstacks sized exactly at launch from
the loop bounds (`qdarray.ad.sizing`); a push beyond capacity raises `AdStackOverflowError`
after the launch. See docs/autodiff.md.
"""

from __future__ import annotations

from typing import Any

from .._errors import AdStackOverflowError, AdStackSizingError, AutodiffError
from .tape import Tape

__all__ = ["Tape", "AdStackOverflowError", "AdStackSizingError", "AutodiffError", "stats"]


def stats() -> dict[str, Any]:
    """Counters of this process: reverse launches sized from the symbolic bounds
    (`symbolic`) and by the counting kernel (`counting`)."""
    from . import sizing

    return dict(sizing.STATS)
