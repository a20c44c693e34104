"""The CPU device: NumPy storage (`backend`), numba kernels (`target`), direct ufunc reductions and
sorting.
"""
