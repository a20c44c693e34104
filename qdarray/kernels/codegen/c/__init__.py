"""The C-syntax renderer: OpenCL C source from the IR (`opencl_c.render_opencl_c`), its op-spelling
table, its helper functions and the C walker.
"""
