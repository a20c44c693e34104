"""Vulkan devices: device memory and streams (`backend`), SPIR-V compute pipelines (`target`) and
the generated-kernel namespace over `VkArray`.
"""
