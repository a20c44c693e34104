"""The numba renderers: Python source of numba functions from the IR, for the CPU
(`cpu.render_numba_cpu`, with SIMD lanes in `lanes*`) and for CUDA (`gpu.render_numba_cuda`),
and the runtime extensions they call.

No module here has a name that starts with `cuda`: numba-cuda's import redirector claims every
module whose dotted name contains `numba.cuda`.
"""
