"""When a reverse launch keeps every k-th loop state instead of all of them, and which k.

A reverse launcher (`ad/launch.py`) sizes and packs its adstacks first. When they would not
fit, because they exceed the limit `qd.ad.set_memory_limit(nbytes)` sets or because the
device cannot give that much memory now (its free memory, with the heaps the launcher
already holds), the launch runs the signature's checkpointed reverse instead
(`ad/transform/checkpoint.py`), with the largest stride k, a power of two, whose adstacks fit: k
smaller than the loops' trip counts. Each candidate is sized and packed like any launch
(the size expressions take k as an argument), from k just below the largest capacity down,
stopping where a smaller k no longer saves memory (k about the square root of the trips:
checkpoints then cost as much as blocks). The choice is kept while the sizing and the
budget are unchanged, so a repeated launch decides nothing again. `qd.ad.stats()` reports
the stride of the last launch (0: every iteration kept).

The limit counts the adstack heaps and the tables that place their entries
(`Packed.tape_bytes + index_bytes`), not the kernel's own arrays.
"""

from __future__ import annotations

import operator
from typing import Any

import numpy as np

_LIMIT: list[int | None] = [None]


class CannotCheckpoint(Exception):
    """The checkpointed reverse cannot be sized without the counting pass."""


def uncountable(args: Any, per_thread: Any = None) -> Any:
    """The counting function of a checkpointed launcher: there is none
    (ad/transform/checkpoint.py)."""
    raise CannotCheckpoint("its stacks need the counting pass")


def set_memory_limit(nbytes: int | None) -> None:
    """Limit the memory of a reverse launch's adstacks (heaps and their tables) to `nbytes`;
    a launch whose adstacks would need more keeps every k-th state of its dynamic loops and
    recomputes the rest (None: no limit but the device's memory).

    Example::

        qd.ad.set_memory_limit(64 << 20)     # 64 MiB of adstacks per launch
        kern.grad(x, a, y)                   # checkpointed if the tape is larger
        qd.ad.stats()["checkpoint_stride"]   # the k it chose (0: all iterations kept)
        qd.ad.set_memory_limit(None)
    """
    if nbytes is not None:
        # Python and NumPy integers (an array's nbytes // 8 is either); no bools, no floats
        if isinstance(nbytes, (bool, np.bool_)) or not hasattr(nbytes, "__index__"):
            raise TypeError(f"set_memory_limit takes a number of bytes (an int) or None; got "
                            f"{nbytes!r}. Use e.g. qd.ad.set_memory_limit(256 << 20).")
        nbytes = operator.index(nbytes)
    if nbytes is not None and nbytes <= 0:
        raise ValueError(f"set_memory_limit needs a positive number of bytes; got {nbytes}. "
                         "Use None to remove the limit.")
    _LIMIT[0] = nbytes


def memory_limit() -> int | None:
    """The limit `set_memory_limit` set (None: none)."""
    return _LIMIT[0]


class Checkpointer:
    """The checkpointing decisions of one reverse launcher (module docstring)."""

    def __init__(self, main: Any) -> None:
        self.main = main
        self.launcher: Any = None
        # (packed layout, user limit, stride, its bytes) of the last choice
        self.choice: tuple[Any, int | None, int, int] | None = None

    def over(self, packed: Any) -> tuple[bool, int | None]:
        """(whether `packed` exceeds the budget, the budget in bytes or None)."""
        need = packed.tape_bytes + packed.index_bytes
        limit = _LIMIT[0]
        if limit is not None and need > limit:
            return True, self.budget()
        pool = self.main.buffers.pool
        held = sum(b.nbytes for b in pool.buffers.values())
        if packed.tape_bytes <= held:
            return False, None  # (no system call on launches the pool already serves)
        budget = self.budget()
        return budget is not None and need > budget, budget

    def budget(self) -> int | None:
        pool = self.main.buffers.pool
        avail = pool.available()
        if avail is not None:
            avail += sum(b.nbytes for b in pool.buffers.values())
        limits = [v for v in (_LIMIT[0], avail) if v is not None]
        return min(limits) if limits else None

    def needed(self, packed: Any) -> bool:
        return bool(self.main.plan.n_stacks) and self.over(packed)[0]

    def launch(self, args: Any, flat: Any, packed: Any) -> bool:
        """Run the checkpointed reverse with the stride that fits; False (nothing run) when
        no stride fits the free memory and no user limit is exceeded: the launch then goes
        on as stored, and the heap pool's MemoryError gives the figures."""
        budget = self.budget()
        choice = self.choice
        # The free memory moves from launch to launch: a stride that still fits is kept.
        if (choice is not None and choice[0] is packed and choice[1] == _LIMIT[0]
                and (budget is None or choice[3] <= budget)):
            stride = choice[2]
        else:
            try:
                stride, cost = self.choose(args, flat, packed, budget)
            except MemoryError:
                limit = _LIMIT[0]
                if limit is not None and packed.tape_bytes + packed.index_bytes > limit:
                    raise
                return False
            self.choice = (packed, _LIMIT[0], stride, cost)
        self.launcher.execute(args, flat, stride)
        return True

    def choose(self, args: Any, flat: Any, packed: Any, budget: int | None
               ) -> tuple[int, int]:
        """(the largest stride whose adstacks fit `budget`, their bytes)."""
        main = self.main
        need = packed.tape_bytes + packed.index_bytes
        if self.launcher is None:
            self.launcher = main.checkpointed(args)
        ck = self.launcher
        if not ck.rev.checkpointed:
            raise MemoryError(self.refusal(need, budget, "it has no dynamic loop whose "
                                           "states could be checkpointed"))
        top = max(main.sized[0][0], default=1)
        stride = 1 << max(top - 1, 1).bit_length() - 1  # the largest power of two < top
        best = None
        while stride >= 1:
            try:
                _, got, _ = ck.prepare(args, flat, stride)
            except CannotCheckpoint:
                raise MemoryError(self.refusal(need, budget, (
                    "its checkpointed form cannot be sized from the loop bounds (while loops "
                    "and bounds read through other arrays need the counting pass, which "
                    "does not see the iterations the reverse runs again)"))) from None
            cost = got.tape_bytes + got.index_bytes
            if budget is None or cost <= budget:
                return stride, cost
            if best is not None and cost >= best[1]:
                break  # smaller strides only add checkpoints
            best = (stride, cost)
            stride //= 2
        assert best is not None
        raise MemoryError(self.refusal(need, budget, (
            f"keeping every {best[0]}-th loop state, the least it can take, still needs "
            f"{best[1]} bytes")))

    def refusal(self, need: int, budget: int | None, why: str) -> str:
        name = self.main.name
        limit = _LIMIT[0]
        what = (f"the limit of {limit} bytes (qd.ad.set_memory_limit)" if limit is not None
                and limit == budget else f"the {budget} bytes the device can give now")
        return (f"The adstacks of the reverse of kernel '{name}' need {need} bytes, more "
                f"than {what}, and checkpointing cannot bring them below it: {why}. Try a "
                "larger limit, launching over fewer threads at a time (split the parallel "
                "loop's range), or float32 locals instead of float64.")
