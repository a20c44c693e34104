"""The reverse-mode transform, IR -> IR: a kernel's reverse and counting kernels
(`reverse_kernel`), the sweep that emits them (`generator`), adstack push / pop, checkpointed
and replayed loops, and the plan their launcher reads.
"""
