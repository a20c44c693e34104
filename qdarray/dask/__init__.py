"""qdarray on Dask: qdarray arrays as chunks of Dask arrays, kernels and their gradients
launched per block, on the processes (and GPUs) of a `dask.distributed` cluster.

Install with `pip install "qdarray[dask]"` (dask[array], distributed); for several GPUs add
`dask-cuda`. Guide: docs/dask.md.

- `map_kernel(kernel, *args, out=...)`: a kernel launched on every block (with `depth=` halos
  for stencils);
- `map_kernel_grad(kernel, *args, out=..., grad=..., wrt=...)`: its reverse, per block, with
  the gradients of inputs that several blocks share (halos, whole arrays) summed;
- `to_device(x, device)`: a Dask array whose chunks are qdarray arrays on `device`.
"""

from __future__ import annotations

try:
    import dask.array  # noqa: F401
except ImportError as exc:  # the optional extra is not installed
    raise ImportError(
        f"qdarray.dask needs Dask ({exc}). Install it with: pip install 'qdarray[dask]' "
        "(dask[array] and distributed)."
    ) from None

from ._chunks import to_device
from ._grad import map_kernel_grad
from ._map import map_kernel
from ._register import register as _register

_register()

__all__ = ["map_kernel", "map_kernel_grad", "to_device"]
