"""OpenCL devices: pyopencl storage (`backend`), OpenCL C kernels (`target`) and the generated-
kernel namespace over `ClArray`.
"""
