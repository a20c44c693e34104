"""The namespace's kernels as IR: what a device with a kernel target runs for the standard.

Each module builds `KernelIR` for one family of namespace operations, parameterized by dtypes,
number of dimensions and layout flags only (never by sizes or values, which are parameters),
and caches it per signature, so one compiled program serves every call of that signature:

- `elementwise`: the body of every elementwise function, with NumPy's semantics per dtype;
- `maps`: strided maps `out[i] = f(x0[i], x1[i], ...)` over any strides (broadcasting is
  stride 0), casts and copies, and the creation formulas (`arange`, `eye`, `linspace`, ...);
- `reductions`: two-stage reductions and arg-reductions over an (M, K) strided view; scans;
- `gathers`: `take`, `take_along_axis`, scatters and mask compaction;
- `sorting`: the bitonic network and binary search of sort / argsort / searchsorted;
- `matmul`: batched matrix products through strides.

Nothing here knows a device: a backend compiles the IR through its kernel target and launches
it (`backends/kernel_xp/` is the namespace that does so for any such backend). A new device
gets the whole namespace by rendering these kernels.
"""

from __future__ import annotations
