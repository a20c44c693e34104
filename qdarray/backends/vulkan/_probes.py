"""What a Vulkan device's driver does that its features do not report, found by running a
kernel once per device (the answers are kept in `DeviceState.extra`).

- `fused_fma`: whether GLSL.std.450's Fma rounds once. Vulkan lets a driver round the
  product first (lavapipe does); the SPIR-V renderer emulates a single rounding there
  (kernels/codegen/spirv/fma.py), which NumPy's complex products need.
- `loop_limit`: the loop passes after which the driver ends a batch of invocations' loops
  early (Mesa's llvmpipe: 65,535, its gallivm loop limiter), or 0. Known from the driver,
  not run: kernels on such a device report cut loops (backends/vulkan/_loop_guard.py).
"""

from __future__ import annotations

import numpy as np

from ... import _dtypes as D
from ...kernels.emit import Emitter, block
from ...kernels.ir import For, KernelIR, Op, Param
from ...kernels.types import ArrayType
from ._instance import DeviceState, physical_devices

# Mesa's LP_MAX_TGSI_LOOP_ITERATIONS (gallivm's lp_bld_limits.h)
LLVMPIPE_LOOP_LIMIT = 65535


def fma_kernel(t: D.DType = D.float32) -> KernelIR:
    """out[i] = fma(a[i], b[i], c[i]) over 1-D arrays of dtype `t`."""
    em = Emitter(0, 0)
    params = [Param(n, em.value(ArrayType(t, 1))) for n in ("out", "a", "b", "c")]
    n = em.emit(Op.SHAPE, params[0].value, attrs=(0,))
    i = em.value(D.int64)
    with em.region() as inner:
        xs = [em.emit(Op.LOAD, p.value, i) for p in params[1:]]
        em.emit(Op.STORE, params[0].value, i, em.emit(Op.FMA, *xs))
    em.stmt(For(i, em.i64(0), n, block(inner), True))
    return KernelIR("qd_probe_fma", tuple(params), block(em.out))


def fused_fma(st: DeviceState) -> bool:
    """Whether the driver's Fma rounds once: (1 + 2^-13)(1 - 2^-13) - 1 is -2^-26 exactly,
    0 when the product is rounded to float32 first."""
    found = st.extra.get("fused_fma")
    if found is None:
        from ..kernel_xp.device import target_launcher
        from ._array import VkArray, device_of

        st.extra["fused_fma"] = True  # the probe runs the driver's own Fma
        try:
            arrays = [VkArray.from_host(st, np.array([v], np.float32))
                      for v in (0.0, 1 + 2.0 ** -13, 1 - 2.0 ** -13, -1.0)]
            target_launcher(device_of(st), fma_kernel())(arrays)
            found = bool(arrays[0].to_host()[0] == np.float32(-(2.0 ** -26)))
        finally:
            st.extra["fused_fma"] = bool(found)
    return bool(found)


def loop_limit(st: DeviceState) -> int:
    """LLVMPIPE_LOOP_LIMIT on Mesa's llvmpipe (lavapipe: its driver name, or the device name
    where a loader reports none), else 0; `st.extra["loop_limit"]` overrides it."""
    found = st.extra.get("loop_limit")
    if found is None:
        devices = physical_devices()  # (in qdarray's order: vulkan:<index>)
        driver = devices[st.index].driver if st.index < len(devices) else ""
        found = st.extra["loop_limit"] = (
            LLVMPIPE_LOOP_LIMIT if "llvmpipe" in f"{driver} {st.name}".lower() else 0)
    return int(found)
