"""A short tour of qdarray on the default device; `python3 dev.py demo` runs it."""

from __future__ import annotations

import numpy as np

import qdarray as qd


def array_maths() -> None:
    x = qd.asarray(np.linspace(0.0, 1.0, 1_000_000), dtype=qd.float32)
    y = x * 2 + 1
    print(f"arrays: y = 2x + 1 over {x.size:,} float32 values on {y.device}; "
          f"y[-1] = {float(y[-1]):.3f}, dtype {y.dtype}")


def main() -> None:
    array_maths()


if __name__ == "__main__":
    main()
