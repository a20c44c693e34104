"""Reverse-mode autodiff of kernels (`qd.ad`).

- `kernel.grad(*args)` runs the reverse of a kernel with the same arguments, accumulating into
  the `.grad` of every argument created with `requires_grad=True`;
- `qd.ad.Tape(loss=y)` records the kernel launches of a block and, on exit, seeds `y.grad`
  with 1 and runs their reverses in reverse order.

Loop-carried locals of dynamic loops live on per-thread adstacks sized exactly at launch from
the loop bounds (`qdarray.ad.sizing`, `qdarray.ad.sizer`): max-reducer kernels evaluate the
bounds, a counting pass sizes what they cannot express, and a cache keyed by the arrays'
write generations makes repeated launches free. A push beyond capacity raises
`AdStackOverflowError` after the launch. See docs/autodiff.md.
"""

from __future__ import annotations

from typing import Any

from .._errors import AdStackOverflowError, AdStackSizingError, AutodiffError
from ..kernels.kernel import set_reverse
from .tape import Tape

__all__ = ["Tape", "AdStackOverflowError", "AdStackSizingError", "AutodiffError", "stats",
           "reset_stats"]


def stats() -> dict[str, Any]:
    """Counters of adstack sizing in this process (since the last `reset_stats()`).

    Returns:
        A dict with `max_reducer_dispatches` (max-reduction kernels launched),
        `counting_passes` (launches sized by the counting kernel), `cache_hits` (reverse
        launches sized entirely from the sizing cache) and `fresh_sizings` (the others).

    Example::

        qd.ad.reset_stats()
        kern.grad(x, a, y)
        kern.grad(x, a, y)            # a unchanged: nothing is dispatched
        assert qd.ad.stats()["max_reducer_dispatches"] == 1
    """
    from . import sizer

    return dict(sizer.STATS)


def _grad_kernel(kernel: Any) -> Any:
    """`kernel.grad` (launch.py, imported on first use)."""
    from .launch import GradKernel

    return GradKernel(kernel)


set_reverse(_grad_kernel)


def reset_stats() -> None:
    """Set every counter of `stats()` to 0."""
    from . import sizer

    for k in sizer.STATS:
        sizer.STATS[k] = 0
