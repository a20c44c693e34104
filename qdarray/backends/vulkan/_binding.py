"""The Vulkan API through the `vulkan` package (a cffi binding of the whole C API, loading the
system's `libvulkan.so.1`), and the translation of Vulkan errors into qdarray's exceptions.

The binding raises `OSError` at import when no Vulkan loader is installed; that becomes a
`VulkanUnavailableError` (a RuntimeError) that says what to install. Hot paths (command
recording, dispatch) call `lib` (the raw cffi functions) with structures built by `ffi`,
skipping the binding's per-call conversions.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from ..._errors import QdarrayError


class VulkanError(QdarrayError, RuntimeError):
    """A Vulkan call failed; the message names the device and the call."""


class VulkanUnavailableError(VulkanError):
    """No Vulkan loader or no usable Vulkan device."""


try:
    import vulkan as vk  # type: ignore[import-untyped]
except OSError as exc:  # the binding imports, but libvulkan.so.1 is not on the library path
    _LOAD_ERROR: str | None = str(exc)
    vk = None
else:
    _LOAD_ERROR = None
    if not hasattr(vk, "vkEnumeratePhysicalDevices"):  # another package named `vulkan`
        where = getattr(vk, "__file__", None) or vk.__path__
        _LOAD_ERROR = (f"the module `vulkan` found at {where} is not the Vulkan binding (pip "
                       "install vulkan)")
        vk = None

# Values the binding leaves as None (core names of promoted extension enums), from the
# Vulkan specification.
BUFFER_USAGE_SHADER_DEVICE_ADDRESS = 0x00020000
MEMORY_ALLOCATE_DEVICE_ADDRESS = 0x00000002

INSTALL_HINT = (
    "Install a Vulkan loader and driver (Debian/Ubuntu: `apt-get install libvulkan1 "
    "mesa-vulkan-drivers` gives lavapipe, Mesa's CPU implementation; GPU vendors ship their "
    "own drivers), or point VK_DRIVER_FILES / VK_ICD_FILENAMES at a driver's ICD JSON "
    "(docs/vulkan.md)."
)


def api() -> Any:
    """The `vulkan` module; VulkanUnavailableError when the loader is missing."""
    if vk is None:
        raise VulkanUnavailableError(
            f"No Vulkan API could be loaded: {_LOAD_ERROR}. {INSTALL_HINT}")
    return vk


def text(value: Any) -> str:
    """A C string field as str (the binding converts some itself)."""
    if isinstance(value, str):
        return value
    return str(api().ffi.string(value).decode())


def _translate(exc: Exception, where: str, what: str) -> Exception:
    name = type(exc).__name__
    if vk is not None and isinstance(exc, (vk.VkErrorOutOfDeviceMemory,
                                           vk.VkErrorOutOfHostMemory)):
        kind = "device" if isinstance(exc, vk.VkErrorOutOfDeviceMemory) else "host"
        return MemoryError(f"{where}: {what} failed: out of {kind} memory ({name}). Free "
                           "arrays (or shrink the launch) and try again.")
    if vk is not None and isinstance(exc, vk.VkErrorDeviceLost):
        return VulkanError(f"{where}: {what} failed: the device was lost ({name}); a kernel "
                           "may have run too long or accessed memory out of bounds. Arrays on "
                           "this device are no longer usable; restart the process.")
    return VulkanError(f"{where}: {what} failed with {name}: {exc}")


@contextmanager
def checked(where: str, what: str) -> Iterator[None]:
    """Run Vulkan calls, translating the binding's errors into qdarray's: MemoryError for
    out-of-memory results, VulkanError otherwise; `where` names the device."""
    try:
        yield
    except Exception as exc:  # noqa: BLE001 - the binding's VkError family, translated
        if vk is not None and isinstance(exc, (vk.VkError, vk.VkException)):
            raise _translate(exc, where, what) from None
        raise


def check_result(result: int, where: str, what: str) -> None:
    """Raise the translated error of a raw `lib` call's VkResult (negative = error)."""
    if result < 0:
        exc_type = api().exception_codes.get(result, api().VkError)
        raise _translate(exc_type(), where, what)
