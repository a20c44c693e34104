"""Reordering a parallel loop's threads by capacity, so the threads of a group loop alike.

In a packed layout with groups of G threads (a GPU's warp), a group runs its threads side by
side: its forward replay and its reverse take as many steps as its deepest thread, and the
lanes of the threads that finished early idle. For trip counts uniform in [0, 64), a warp of
32 runs about 62 iterations where its threads need 31.5 on average: half the issue slots
are wasted. Ray tracers sort rays for the same reason; here the launch sorts its threads.

Per parallel loop (task) with packed stacks, when the sizing is computed (and cached with
it; `ReverseLauncher.prepare`):

- each thread's key is the sum of its capacities of the task's stacks (its total entries:
  with several stacks or several dynamic loops, the work of its forward replay and reverse);
- the group efficiency is the sum of the keys over the sum of each group's thread count x
  its largest key (`work`): 1 when a group's threads all run as long, 1/G at worst. Below
  `1 / THRESHOLD` (0.8: more than a quarter of the lanes' steps idle), the threads are
  reordered;
- the order is a stable counting sort of the keys, largest first, within each window of
  `WINDOW` consecutive threads, on the arrays' device (`pack_kernels`): exact keys when
  the largest capacity is below `BINS`, else keys shifted right until it is (buckets of
  2**s capacities). Sorting within windows keeps a warp's threads among neighbours, so the
  arrays they index by thread (x[i], a[i], x.grad[i]) stay in cache instead of each
  thread's element costing a memory transaction; a window of 1024 threads holds 32 warps,
  enough for their largest keys to differ by about 2 for trip counts uniform in [0, 64).
  Each window owns one row of the histogram (no atomics: the order is the same on every
  run and device);
- the stacks are packed in that order (group g holds the threads order[g*G : (g+1)*G]),
  and the reverse kernel runs logical thread order[t] on hardware thread t (the task's loop
  indices decoded from it; one load per thread, `transform.Gen.rev_task`). The order is
  stored in the `rows` array; the layout array's field per task gives where (-1: not
  reordered). Two thread numbers share an int64 there (4 bytes per thread; launches of
  2**31 threads or more are not reordered).

Results are those of the unpermuted reverse: each thread computes what it computed before.
Where the reverse accumulates into shared locations with float atomics, the order in which
the additions land changes, as it does on any GPU from run to run; integer results and
per-thread gradients are exact. CPUs (scratch layouts) and groups of one thread never
reorder.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

THRESHOLD = 1.25  # reorder when Σ_groups count x max(key) > THRESHOLD x Σ key
BINS = 256        # histogram bins (keys below it sorted exactly)
WINDOW = 1024     # consecutive threads sorted among themselves (a histogram row each)


@dataclass
class Order:
    """One task's reordering: `order` (n int64 on the device: the logical thread that
    hardware thread t runs, or None when not reordered; dropped once packed into the rows
    array), the sum of its keys, the work of its groups before and after (`work`:
    Σ_groups count x max key) and whether it is `sorted`."""

    order: Any
    n: int
    entries: int
    work_before: int
    work_after: int
    sorted: bool = False


def task_order(packer: Any, sources: list[tuple[Any, int]], n: int, largest: int,
               threshold: float) -> Order:
    """The order of one task's `n` threads (sorted only when worth it, module docstring):
    `sources` are its stacks' per-thread capacities (device array, where they start),
    `largest` a bound of a thread's key (the sum of the stacks' largest capacities)."""
    key = packer.filled(n, 0)
    for caps, at in sources:
        packer.run("add", key, caps, at, n)
    entries, before = efficiency(packer, key, n)
    if entries == 0 or before <= threshold * entries:
        return Order(None, n, entries, before, before)
    order = sort(packer, key, n, largest)
    sorted_key = packer.empty(n)
    packer.run("gather", key, 0, order, n, sorted_key, 0)
    _, after = efficiency(packer, sorted_key, n)
    return Order(order, n, entries, before, after, True)


def efficiency(packer: Any, key: Any, n: int) -> tuple[int, int]:
    """(Σ key, Σ_groups count x max key) over groups of `packer.group` threads."""
    group = packer.group
    ng = -(-n // group)
    work, sums = packer.empty(ng), packer.empty(ng)
    packer.run("work", key, n, group, ng, work, sums)
    totals = packer.empty(2)
    scratch = packer.empty(ng + 1)
    packer.scan(sums, 0, ng, scratch, 0, 0, totals, 0)
    packer.scan(work, 0, ng, scratch, 0, 0, totals, 1)
    got = packer.buffers.to_host(totals)
    return int(got[0]), int(got[1])


def sort(packer: Any, key: Any, n: int, largest: int) -> Any:
    """The threads 0..n-1 by key, largest first within each window of WINDOW threads,
    stable (a counting sort on the device)."""
    shift = max(int(largest).bit_length() - (BINS - 1).bit_length(), 0)
    bins = min(BINS, (max(int(largest), 0) >> shift) + 1)
    chunk = WINDOW
    nc = -(-n // chunk)
    hist = packer.filled(bins * nc, 0)
    packer.run("histogram", key, n, chunk, nc, shift, bins, hist)
    offs = packer.empty(bins * nc + 1)
    packer.scan(hist, 0, bins * nc, offs, 0, 0, packer.empty(1), 0)
    order = packer.empty(n)
    packer.run("scatter", key, n, chunk, nc, shift, bins, offs, order)
    return order
