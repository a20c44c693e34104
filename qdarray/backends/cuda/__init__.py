"""CUDA devices: CuPy storage (`backend`), numba.cuda kernels (`target`) launched through the
driver (`direct_launch`), and the namespace over CuPy.
"""
