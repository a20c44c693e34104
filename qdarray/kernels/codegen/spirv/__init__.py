"""The SPIR-V renderer: compute modules from the IR (`render.render_spirv`), the binary module
writer, the op-spelling table and the multi-instruction spellings (numerics, libm,
trigonometry).
"""
