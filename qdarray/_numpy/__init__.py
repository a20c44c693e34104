"""NumPy's protocols and functions on qdarray arrays: `__array_ufunc__` / `__array_function__`, NEP
35 creation, NumPy-only methods and reductions, and NumPy data as operands.
"""
