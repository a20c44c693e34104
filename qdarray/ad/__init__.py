"""Reverse-mode autodiff of whole programs: kernels and namespace operations (`qd.ad`).

- `kernel.grad(*args)` runs the reverse of a kernel with the same arguments, accumulating into
  the `.grad` of every argument created with `requires_grad=True`;
- `qd.ad.Tape()` records the kernel launches and namespace operations of a block;
  `tape.backward(loss)` runs their reverses, last first (`Tape(loss=y)` does it on exit);
- `qd.ad.grad(f)` / `qd.ad.value_and_grad(f)`: the functional form, as in JAX;
- `qd.ad.stop_gradient(x)`: a constant view of `x`; `qd.ad.zero_grad(*arrays)` clears
  gradients (`Tape(zero_grads=True)` clears those of every array it recorded).

Loop-carried locals of dynamic loops live on per-thread adstacks sized exactly at launch from
the loop bounds (`qdarray.ad.sizing.bounds`, `qdarray.ad.sizing.at_launch`): max-reducer kernels
evaluate the bounds, a counting pass sizes what they cannot express, and a cache keyed by the
arrays' write generations makes repeated launches free. A push beyond capacity raises
`AdStackOverflowError` after the launch. See docs/autodiff.md.
"""

from __future__ import annotations

from typing import Any

from .._errors import AdStackOverflowError, AdStackSizingError, AutodiffError
from ..kernels.kernel import set_reverse
from .sizing.checkpoint_stride import memory_limit, set_memory_limit
from .tape import tape as _tape
from .tape.functional import grad, stop_gradient, value_and_grad
from .tape.gc_pause import pause_gc
from .tape.snapshots import zero_grad
from .tape.tape import Tape

__all__ = ["Tape", "AdStackOverflowError", "AdStackSizingError", "AutodiffError", "grad",
           "memory_limit", "pause_gc", "reset_stats", "set_memory_limit", "stats", "stop_gradient",
           "value_and_grad", "zero_grad"]


def stats() -> dict[str, Any]:
    """Counters of adstack sizing in this process (since the last `reset_stats()`).

    Returns:
        A dict with `max_reducer_dispatches` (max-reduction kernels launched),
        `counting_passes` (launches sized by the counting kernel), `cache_hits` (reverse
        launches sized entirely from the sizing cache), `fresh_sizings` (the others),
        `adstack_bytes` and `adstack_index_bytes` (the last reverse launch's adstack heaps
        and the tables that place their entries), `checkpoint_stride` (the last reverse
        launch's: every k-th iteration of its dynamic loops kept, the rest recomputed; 0
        when all are kept), `adstack_position_bits` (32 where the last reverse launch ran
        the variant with 32-bit tape positions, else 64; 0 before any), `reorderings`
        (thread orders computed, ad/transform/reorder.py: once per sizing of a launch whose groups
        waste lanes), the last reverse launch's `reordered_tasks` (parallel loops whose
        threads ran sorted by capacity), `group_efficiency` and
        `group_efficiency_reordered` (Σ entries / Σ_groups threads x largest entries,
        before and after reordering; 1.0 on CPUs, which do not group),
        `tape_operations` and `tape_kernel_launches` (namespace operations and kernel
        launches recorded on tapes), `tape_snapshot_bytes` (copies tapes made of what
        recorded writes overwrote of what recorded reverses need), and `tape_bytes_held`
        (what the tapes not yet run keep for their reverses now: arrays the VJP rules need,
        kernel arguments, gradient companions they made, snapshots; `tape.stats()` gives one
        tape's).

    Example::

        qd.ad.reset_stats()
        kern.grad(x, a, y)
        kern.grad(x, a, y)            # a unchanged: nothing is dispatched
        assert qd.ad.stats()["max_reducer_dispatches"] == 1
    """
    from .sizing import at_launch as sizer

    return {**sizer.STATS, **_tape.COUNTS, "tape_bytes_held": _tape.bytes_held()}


def _grad_kernel(kernel: Any) -> Any:
    """`kernel.grad` (launch.py, imported on first use)."""
    from .launch import GradKernel

    return GradKernel(kernel)


set_reverse(_grad_kernel)


def reset_stats() -> None:
    """Set every counter of `stats()` to 0."""
    from .sizing import at_launch as sizer

    for k in sizer.STATS:
        sizer.STATS[k] = 0
    for k in _tape.COUNTS:
        _tape.COUNTS[k] = 0
