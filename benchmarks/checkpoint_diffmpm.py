"""examples/diffmpm.py with and without `--checkpoint-steps`: time per iteration, memory, and
whether the gradients are the same bits.

    python benchmarks/checkpoint_diffmpm.py [--steps 1024] [--segments 32] [--runs 3]
                                            [--iters 3] [--warmup 1] [--device cpu]

Each run starts a fresh process per setting (one tape over all steps, then each segment
length), the order alternating from run to run. A process builds the robot, takes the
gradient `warmup` times from the initial weights (the first one's gradient and loss are
compared across settings), then times `iters` more forward + backward passes (median), and
reports:

- `Tape.stats()` of the tapes of one iteration: the most bytes one held when its recording
  ended (`bytes_held`: the arrays its launches were given, counted once, the gradient
  companions it made and its copies) and of those the copies of the grid (`snapshot_bytes`);
- the peak that tracemalloc sees (NumPy reports its buffers to it) from building the robot
  through one forward + backward, in a new robot: all the arrays, their gradients, the
  checkpoints and the tapes' copies;
- the loss and the gradients of the weights and the bias, compared bit for bit with one tape's.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def child(steps: int, segment: int | None, device: str, iters: int, warmup: int
          ) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "examples"))
    import diffmpm

    sim = diffmpm.DiffMPM(steps, device, segment)
    sim.init_weights()
    loss = sim.forward_backward()
    grads = sim.grads()
    digest = hashlib.sha256(b"".join(grads[k].tobytes() for k in sorted(grads))).hexdigest()
    for _ in range(warmup - 1):
        sim.forward_backward()
    times = []
    stats: list[dict[str, int]] = []
    for _ in range(iters):
        start = time.perf_counter()
        sim.forward_backward()
        times.append(time.perf_counter() - start)
    sim.forward_backward(stats)  # Tape.stats() walks the records: not timed
    del sim
    gc.collect()
    tracemalloc.start()
    sim = diffmpm.DiffMPM(steps, device, segment)
    sim.init_weights()
    sim.forward_backward()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return {"segment": segment, "loss": loss, "grads": digest, "times": times,
            "seconds": statistics.median(times), "tapes": len(stats),
            "bytes_held": max(s["bytes_held"] for s in stats),
            "snapshot_bytes": max(s["snapshot_bytes"] for s in stats), "traced_peak": peak}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1024)
    parser.add_argument("--segments", type=int, nargs="+", default=[32])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--iters", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)  # 0: one tape
    args = parser.parse_args()
    if args.child is not None:
        print(json.dumps(child(args.steps, args.child or None, args.device, args.iters,
                               max(1, args.warmup))))
        return

    settings = [0, *args.segments]
    results: dict[int, list[dict[str, Any]]] = {k: [] for k in settings}
    for run in range(args.runs):
        for k in settings if run % 2 == 0 else settings[::-1]:
            out = subprocess.run(
                [sys.executable, __file__, "--child", str(k), "--steps", str(args.steps),
                 "--iters", str(args.iters), "--warmup", str(args.warmup),
                 "--device", args.device], check=True, capture_output=True, text=True)
            results[k].append(json.loads(out.stdout.splitlines()[-1]))
            r = results[k][-1]
            print(f"run {run}, {'one tape' if k == 0 else f'segments of {k}'}: "
                  f"{r['seconds']:.2f} s an iteration", flush=True)

    one = results[0][0]
    mib = 2.0 ** 20
    print(f"\n{args.steps} steps on {args.device}; median of {args.iters} iterations per "
          f"run (min-max over {args.runs} runs)")
    print("| setting | s / iteration | tapes | a tape held at most | of which copies "
          "| traced peak | gradients |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for k in settings:
        rs = results[k]
        secs = [r["seconds"] for r in rs]
        same = all(r["grads"] == one["grads"] and r["loss"] == one["loss"] for r in rs)
        r = rs[0]
        print(f"| {'one tape' if k == 0 else f'--checkpoint-steps {k}'} "
              f"| {statistics.median(secs):.2f} ({min(secs):.2f}-{max(secs):.2f}) "
              f"| {r['tapes']} | {r['bytes_held'] / mib:.1f} MiB "
              f"| {r['snapshot_bytes'] / mib:.1f} MiB | {r['traced_peak'] / mib:.1f} MiB "
              f"| {'the same bits' if same else 'differ'} |")


if __name__ == "__main__":
    main()
