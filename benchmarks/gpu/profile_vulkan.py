"""Where Vulkan kernel launches spend their time, and the dispatch shapes of the kernels
compare.py and compare_reducer.py time (device times from timestamp queries).

    python benchmarks/gpu/profile_vulkan.py [--device vulkan:0] [--n 1e7] [--saxpy-n 1e8]
                                            [--json PATH]

1. A 16-element saxpy launch: microseconds of Python per launch (nothing submitted), host
   microseconds per launch without synchronising, per launch and synchronisation (waits
   polling the stream's timeline semaphore first, as by default, and blocking at once), and
   per bare round trip (a 4-byte fill, submitted and waited
   for), and per launch and synchronisation with 512 more buffers allocated (each its own
   device memory); then a profile of synchronised launches, the functions with the most time
   of their own.
2. saxpy over --saxpy-n float32: the qdarray kernel with its dispatch capped at 1,024 to
   65,535 workgroups (GROUPS, backends/vulkan/target.py), its wall time per synchronised
   call against its device time, and the runtime's hand-written grid-stride shader
   (benchmarks/compare_vulkan_runtime.py) for reference.
3. The dynamic-loop kernel (`y[0] += v` after a[i] logistic steps, N = --n) forward under the
   same caps, and its reverse: the device time of the whole call and of the reverse kernel's
   own dispatch (each dispatch of the call between two timestamps), also compiled without
   the unit-stride indexing, to see what it is worth.
4. The max-reducer over --saxpy-n int32 with 2**16 to 2**22 work-items (STRIDED_ITEMS,
   ad/sizing/max_reducer.py).
5. compare.py's own qdarray cases (benchmarks/_workloads.py: launch16, saxpy, fwd, rev,
   fwd+rev, each call synchronised) timed as compare.py times them, with how many of their
   waits for the device blocked in vkWaitForFences instead of seeing the fence signalled
   while polling it (a blocked wait wakes late on NVIDIA's driver), the host's time in those
   waits, and how many batches replayed a recorded command buffer.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import os
import pstats
import struct
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(HERE, ".."))

import qdarray as qd  # noqa: E402
from qdarray.ad.sizing import max_reducer as R  # noqa: E402
from qdarray.backends.vulkan import _instance, _pipelines, _stream  # noqa: E402
from qdarray.backends.vulkan import target as _kernels  # noqa: E402

RESULTS: dict[str, Any] = {}


@qd.kernel
def saxpy(a: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = a * x[i] + y[i]


@qd.kernel
def logistic(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v


def report(key: str, text: str, value: Any) -> None:
    RESULTS[key] = value
    print(text, flush=True)


def device_time(stream: _stream.Stream, f: Callable[[], Any], repeat: int = 10) -> float:
    """Best seconds of device time of what `f` records (after one warm-up call)."""
    f()
    stream.finish()
    best = 1e9
    for _ in range(repeat):
        t = stream.timer()
        t.start()
        f()
        t.stop()
        best = min(best, t.elapsed_ns() * 1e-9)
    return best


ALLOCATIONS = 512  # 1 MiB buffers alive during the last launch16 timing


def launches(dev: qd.Device, stream: _stream.Stream) -> None:
    x = qd.ones(16, dtype=qd.float32, device=dev)
    y = qd.ones(16, dtype=qd.float32, device=dev)
    a = np.float32(2.0)
    saxpy(a, x, y)
    stream.finish()
    n = 2000
    batch = _stream.BATCH_COMMANDS
    _stream.BATCH_COMMANDS = 10**9  # nothing submitted while timing: the Python path alone
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            saxpy(a, x, y)
        python = (time.perf_counter() - t0) / n
    finally:
        _stream.BATCH_COMMANDS = batch
    stream.finish()
    t0 = time.perf_counter()
    for _ in range(n):
        saxpy(a, x, y)
    host = (time.perf_counter() - t0) / n
    stream.finish()
    waited = stream.wait_seconds
    t0 = time.perf_counter()
    for _ in range(n):
        saxpy(a, x, y)
        stream.finish()
    synced = (time.perf_counter() - t0) / n
    waited = (stream.wait_seconds - waited) / n
    spin = _stream.SPIN_SECONDS
    _stream.SPIN_SECONDS = 0.0  # waits that block at once, as before the fence polling
    try:
        t0 = time.perf_counter()
        for _ in range(n):
            saxpy(a, x, y)
            stream.finish()
        blocking = (time.perf_counter() - t0) / n
    finally:
        _stream.SPIN_SECONDS = spin
    target = x._data.base_data
    t0 = time.perf_counter()
    for _ in range(n):
        stream.fill(target, 0, 4, 0x3F800000)  # 1.0f
        stream.finish()
    trip = (time.perf_counter() - t0) / n
    report("launch16", f"launch16: {python * 1e6:.1f} us of Python per launch (nothing "
           f"submitted), {host * 1e6:.1f} us host per launch unsynchronised (batches of "
           f"{batch} submitted), {synced * 1e6:.1f} us per launch + finish (of which "
           f"{waited * 1e6:.1f} us waiting for the device; {blocking * 1e6:.1f} us with "
           f"waits that do not poll the timeline), {trip * 1e6:.1f} us per bare fill + finish",
           {"python": python, "host": host, "synced": synced, "synced_wait": waited,
            "synced_blocking": blocking, "round_trip": trip})
    # A driver that walks every allocation at each submission would slow down here.
    from qdarray.backends.vulkan._memory import pool

    extra = [pool(stream.st).alloc(1 << 20) for _ in range(ALLOCATIONS)]
    t0 = time.perf_counter()
    for _ in range(n):
        saxpy(a, x, y)
        stream.finish()
    crowded = (time.perf_counter() - t0) / n
    del extra
    report("launch16_crowded", f"launch16: {crowded * 1e6:.1f} us per launch + finish with "
           f"{ALLOCATIONS} more buffers allocated", crowded)
    prof = cProfile.Profile()
    prof.enable()
    for _ in range(500):
        saxpy(a, x, y)
        stream.finish()
    prof.disable()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(15)
    print(out.getvalue())


def over_group_counts(stream: _stream.Stream, call: Callable[[], Any]
                      ) -> list[tuple[int, float]]:
    """(workgroups, device time of `call`) with the launcher's grid capped at each of
    1024 ... 65535 workgroups (GROUPS restored afterwards)."""
    cap = _kernels.GROUPS
    out = []
    try:
        for groups in (1024, 4096, 16384, 65535):
            _kernels.GROUPS = groups
            out.append((groups, device_time(stream, call)))
    finally:
        _kernels.GROUPS = cap
    return out


def saxpy_shapes(dev: qd.Device, stream: _stream.Stream, n: int) -> None:
    from compare_vulkan_runtime import LOCAL, saxpy_module

    from qdarray.backends.vulkan._array import VkArray

    rng = np.random.default_rng(0)
    x = qd.asarray(rng.random(n, dtype=np.float32), device=dev)
    y = qd.asarray(rng.random(n, dtype=np.float32), device=dev)
    a = np.float32(2.0)
    for groups, t in over_group_counts(stream, lambda: saxpy(a, x, y)):
        report(f"saxpy_groups_{groups}", f"saxpy {n:.0e}: {groups:6d} workgroups "
               f"{t * 1e3:8.3f} ms {12 * n / t / 1e9:7.0f} GB/s", t)
    device = device_time(stream, lambda: saxpy(a, x, y))
    walls = []
    for _ in range(20):
        t0 = time.perf_counter()
        saxpy(a, x, y)
        stream.finish()
        walls.append(time.perf_counter() - t0)
    wall = sorted(walls)[10]
    report("saxpy_wall", f"saxpy {n:.0e}: {wall * 1e3:8.3f} ms wall per synchronised call "
           f"(median of 20), {device * 1e3:8.3f} ms device: {(wall - device) * 1e6:.1f} us "
           f"on the host ({device / wall:.0%} of the wall on the device)",
           {"wall": wall, "device": device})
    st = _instance.state(dev.index)
    hx = VkArray.from_host(st, np.ones(n, np.float32))
    hy = VkArray.from_host(st, np.zeros(n, np.float32))
    prog = _pipelines.program(st, saxpy_module(), 2, 8)
    push = struct.pack("<If", n, 2.0)
    groups = min(-(-n // LOCAL), 65535)
    t = device_time(stream, lambda: prog.dispatch((groups, 1, 1), [hx.alloc, hy.alloc], push))
    report("saxpy_runtime", f"saxpy {n:.0e}: hand-written shader {t * 1e3:8.3f} ms "
           f"{12 * n / t / 1e9:7.0f} GB/s", t)


def dynamic_loop(dev: qd.Device, stream: _stream.Stream, n: int) -> None:
    rng = np.random.default_rng(0)
    x = qd.asarray(rng.random(n, dtype=np.float32), device=dev, requires_grad=True)
    a = qd.asarray(rng.integers(0, 64, n).astype(np.int32), device=dev)
    y = qd.zeros(1, dtype=qd.float32, device=dev, requires_grad=True)
    y.grad[...] = 1.0
    for groups, t in over_group_counts(stream, lambda: logistic(x, a, y)):
        report(f"fwd_groups_{groups}", f"forward N={n:.0e}: {groups:6d} workgroups "
               f"{t * 1e3:8.3f} ms", t)
    t = device_time(stream, lambda: logistic.grad(x, a, y), repeat=5)
    report("rev", f"reverse N={n:.0e}: {t * 1e3:8.3f} ms (device time of the whole call)", t)
    best = dispatch_times(stream, lambda: logistic.grad(x, a, y))
    report("rev_kernel", f"reverse N={n:.0e}: {best[0] * 1e3:8.3f} ms the reverse kernel's "
           f"dispatch ({len(best)} dispatches in the call, the others "
           f"{sum(best[1:]) * 1e3:.3f} ms together)", best)
    # The same kernel compiled without each of the SPIR-V renderer's layout facts: a fresh
    # @qd.kernel of the same function, so its modules are rendered anew.
    launcher = _kernels.VulkanLauncher
    unit_last, layouts = _kernels.unit_last, launcher._layouts

    def no_unit_strides() -> None:  # every launch through _shapes, which finds none
        _kernels.unit_last = lambda x: False
        launcher._layouts = lambda self, native: None  # type: ignore[assignment,method-assign]

    for name, undo in (("no_unit_strides", no_unit_strides),):
        undo()
        try:
            again = qd.kernel(logistic.fn)
            again(x, a, y)
            best = dispatch_times(stream, lambda: again.grad(x, a, y))  # noqa: B023
        finally:
            _kernels.unit_last = unit_last
            launcher._layouts = layouts  # type: ignore[method-assign]
        report(f"rev_kernel_{name}", f"reverse N={n:.0e}: {best[0] * 1e3:8.3f} ms the reverse "
               f"kernel's dispatch compiled with {name.replace('_', ' ')}", best)


def dispatch_times(stream: _stream.Stream, call: Callable[[], Any]) -> list[float]:
    """Seconds of device time of each dispatch `call` records, each between two timestamps
    of its own, longest first (the best of 3 calls, after one warm-up)."""
    call()
    stream.finish()
    times: list[Any] = []
    add = stream.add

    def timed(op: tuple[Any, ...], *keep: Any) -> None:
        if op[0] != "dispatch":
            add(op, *keep)
            return
        t = stream.timer()
        t.start()
        add(op, *keep)
        t.stop()
        times.append(t)

    best: list[float] = []
    for _ in range(3):
        times.clear()
        stream.add = timed  # type: ignore[method-assign]
        try:
            call()
        finally:
            del stream.add
        stream.finish()
        got = sorted((t.elapsed_ns() * 1e-9 for t in times), reverse=True)
        best = got if not best or got[0] < best[0] else best
    return best


def reducer(dev: qd.Device, stream: _stream.Stream, n: int) -> None:
    from compare_reducer import launch_tail

    from qdarray import _dtypes
    from qdarray.ad.sizing.bounds import Const, LoopVar, MaxOverRange, Read
    from qdarray.kernels.types import ArrayType

    host = np.random.default_rng(0).integers(0, 1 << 30, n).astype(np.int32)
    data = qd.asarray(host, device=dev)
    i = LoopVar(1, "i")
    red = R.Reducer(R.chain_of(MaxOverRange(i, Const(0), Const(n), Read("d", (i,)))),
                    {"d": ArrayType(_dtypes.int32, 1)}, _kernels.TARGET, dev)
    launch = red.compiled()
    most = R.STRIDED_ITEMS
    try:
        for items in (1 << 16, 1 << 18, 1 << 20, 1 << 22):
            R.STRIDED_ITEMS = items
            assert red.run({"d": data}, [], [0], [n]) == host.max()
            args = [data, 0, n] + launch_tail(red, dev, n, n)
            t = device_time(stream, lambda: launch(args))  # noqa: B023
            report(f"reducer_items_{items}", f"reducer {n:.0e} int32: {items:8d} work-items "
                   f"{t * 1e3:8.3f} ms {4 * n / t / 1e9:7.0f} GB/s", t)
    finally:
        R.STRIDED_ITEMS = most


def compare_cases(dev: qd.Device, stream: _stream.Stream, n: int, saxpy_n: int) -> None:
    import _workloads as W
    from compare import measure

    cases = W.qdarray_cases(W.Problem(saxpy_n=saxpy_n, n=n, device=str(dev)))
    for name, case in cases.items():
        case.run()
        waits, blocked, waited = stream.waits, stream.blocked, stream.wait_seconds
        submitted, replayed = stream.submitted, stream.replayed
        t = sorted(measure({name: case}, 7, 0.1)[name])[3]
        waits, blocked = stream.waits - waits, stream.blocked - blocked
        waited = (stream.wait_seconds - waited) / max(waits, 1)
        submitted, replayed = stream.submitted - submitted, stream.replayed - replayed
        report(f"compare_{name}", f"compare.py {name}: {t * 1e6:9.1f} us per call; "
               f"{waited * 1e6:.1f} us per wait for the device; {blocked} of {waits} waits "
               f"blocked; {replayed} of {submitted} batches replayed",
               {"time": t, "waits": waits, "blocked": blocked, "wait": waited,
                "submitted": submitted, "replayed": replayed})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--device", default="vulkan:0")
    parser.add_argument("--n", type=float, default=1e7)
    parser.add_argument("--saxpy-n", type=float, default=1e8)
    parser.add_argument("--json", default="")
    args = parser.parse_args()
    dev = qd.Device(args.device)
    st = _instance.state(dev.index)
    stream = _stream.stream(st)
    print(f"device {st.label} ({st.kind})")
    launches(dev, stream)
    saxpy_shapes(dev, stream, int(args.saxpy_n))
    dynamic_loop(dev, stream, int(args.n))
    reducer(dev, stream, int(args.saxpy_n))
    compare_cases(dev, stream, int(args.n), int(args.saxpy_n))
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(RESULTS, fh, indent=1)


if __name__ == "__main__":
    main()
