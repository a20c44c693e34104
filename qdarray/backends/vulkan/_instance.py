"""The Vulkan instance, the physical devices in qdarray's order, and one logical device each.

Order of `Device("vulkan:N")` (stable across runs and independent of the loader's listing
order): discrete GPUs, integrated GPUs, virtual GPUs, CPU implementations (lavapipe,
SwiftShader), then anything else; within a kind by device name, then driver name, then the
loader's position. Devices that report a Vulkan version below 1.2 or have no compute queue
are left out; `unusable()` says which and why. `QDARRAY_VULKAN_DEVICE=<substring>` keeps only
the devices whose name contains the substring (case-insensitive), e.g. `llvmpipe`, `nvidia`.

A logical device is made on first use of its index, with one compute queue and the optional
features qdarray uses where present (64-bit and 8/16-bit integer types and storage, float64,
64-bit integer atomics, float atomics, buffer device addresses).
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from typing import Any

from ._binding import INSTALL_HINT, VulkanUnavailableError, api, checked, text

# VkPhysicalDeviceType -> rank in qdarray's order
_TYPE_RANK = {2: 0, 1: 1, 3: 2, 4: 3}  # discrete, integrated, virtual, CPU; other (0) last
TYPE_NAMES = {0: "other", 1: "integrated GPU", 2: "discrete GPU", 3: "virtual GPU", 4: "CPU"}
_API_1_2 = (1 << 22) | (2 << 12)

_lock = threading.RLock()
_instance: Any = None
_physical: list[Physical] | None = None
_unusable: list[str] = []
_states: dict[int, DeviceState] = {}


@dataclass
class Physical:
    """A physical device as listed, before a logical device is made."""

    handle: Any
    name: str
    driver: str
    type: int
    api_version: int
    position: int


@dataclass
class DeviceState:
    """One Vulkan device as qdarray uses it (features are what was enabled)."""

    index: int
    name: str
    type: int
    physical: Any
    device: Any
    queue: Any
    queue_family: int
    limits: dict[str, int]
    features: dict[str, bool]
    extensions: frozenset[str]
    memory_types: list[tuple[int, int]]  # (property flags, heap index)
    heap_sizes: list[int]
    heap_device_local: list[bool]
    timestamp_period: float
    timestamp_bits: int
    lock: threading.RLock = field(default_factory=threading.RLock)
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def label(self) -> str:
        """How errors name the device: `vulkan:0 (llvmpipe (LLVM 15.0.6, 256 bits))`."""
        return f"vulkan:{self.index} ({self.name})"

    @property
    def kind(self) -> str:
        return TYPE_NAMES.get(self.type, "other")


def instance() -> Any:
    """The process's VkInstance (created on first use)."""
    global _instance
    with _lock:
        if _instance is None:
            vk = api()
            app = vk.VkApplicationInfo(pApplicationName="qdarray", applicationVersion=1,
                                       pEngineName="qdarray", engineVersion=1,
                                       apiVersion=_API_1_2)
            info = vk.VkInstanceCreateInfo(pApplicationInfo=app, enabledLayerCount=0,
                                           enabledExtensionCount=0)
            with checked("Vulkan", "vkCreateInstance"):
                try:
                    _instance = vk.vkCreateInstance(info, None)
                except (vk.VkErrorIncompatibleDriver, vk.VkErrorInitializationFailed) as exc:
                    # the loader found no driver it can use: no Vulkan device, not a failure
                    raise VulkanUnavailableError(
                        f"No usable Vulkan driver: vkCreateInstance failed with "
                        f"{type(exc).__name__}. {INSTALL_HINT}") from None
        return _instance


def _version(v: int) -> str:
    return f"{v >> 22}.{(v >> 12) & 0x3FF}"


def physical_devices() -> list[Physical]:
    """The usable physical devices, in qdarray's order (see the module docstring)."""
    global _physical
    with _lock:
        if _physical is not None:
            return _physical
        vk = api()
        found: list[Physical] = []
        _unusable.clear()
        wanted = os.environ.get("QDARRAY_VULKAN_DEVICE", "").lower()
        for pos, handle in enumerate(vk.vkEnumeratePhysicalDevices(instance())):
            props = vk.vkGetPhysicalDeviceProperties(handle)
            name = text(props.deviceName)
            if wanted and wanted not in name.lower():
                _unusable.append(f"{name}: its name does not contain QDARRAY_VULKAN_DEVICE="
                                 f"{os.environ['QDARRAY_VULKAN_DEVICE']!r}")
                continue
            if props.apiVersion < _API_1_2:
                _unusable.append(f"{name}: Vulkan {_version(props.apiVersion)}, qdarray needs "
                                 "1.2 or newer")
                continue
            if _compute_family(handle) is None:
                _unusable.append(f"{name}: no compute queue")
                continue
            driver = _driver_name(handle)
            found.append(Physical(handle, name, driver, int(props.deviceType),
                                  int(props.apiVersion), pos))
        found.sort(key=lambda p: (_TYPE_RANK.get(p.type, 4), p.name, p.driver, p.position))
        _physical = found
        return found


def unusable() -> list[str]:
    """Devices the loader lists that qdarray leaves out, each with the reason."""
    physical_devices()
    return list(_unusable)


def _driver_name(handle: Any) -> str:
    vk = api()
    driver = vk.ffi.new("VkPhysicalDeviceDriverProperties*")
    driver.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES
    props2 = vk.ffi.new("VkPhysicalDeviceProperties2*")
    props2.sType = vk.VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2
    props2.pNext = driver
    vk.lib.vkGetPhysicalDeviceProperties2(handle, props2)
    return text(driver.driverName)


def _max_allocation(handle: Any) -> int:
    """The largest single allocation the device takes (maxMemoryAllocationSize, Vulkan 1.1)."""
    vk = api()
    m3 = _new_struct("VkPhysicalDeviceMaintenance3Properties",
                     "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_3_PROPERTIES")
    props2 = _new_struct("VkPhysicalDeviceProperties2",
                         "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2", m3)
    vk.lib.vkGetPhysicalDeviceProperties2(handle, props2)
    return int(m3.maxMemoryAllocationSize)


def _compute_family(handle: Any) -> tuple[int, int] | None:
    """(queue family, timestamp valid bits) of the family compute work goes to: one with
    compute and timestamps, preferring a compute-only family (no graphics)."""
    vk = api()
    best: tuple[int, int, int] | None = None
    for i, fam in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(handle)):
        if not fam.queueFlags & vk.VK_QUEUE_COMPUTE_BIT:
            continue
        rank = (0 if fam.timestampValidBits else 2) + (1 if fam.queueFlags
                                                       & vk.VK_QUEUE_GRAPHICS_BIT else 0)
        if best is None or rank < best[0]:
            best = (rank, i, int(fam.timestampValidBits))
    return None if best is None else (best[1], best[2])


def _new_struct(ctype: str, stype: str, pnext: Any = None) -> Any:
    vk = api()
    s = vk.ffi.new(ctype + "*")
    s.sType = getattr(vk, stype)
    if pnext is not None:
        s.pNext = pnext
    return s


def _features(handle: Any, extensions: frozenset[str]) -> tuple[Any, dict[str, bool]]:
    """The feature chain to enable (what qdarray uses, where present) and a summary."""
    vk = api()
    chain: list[Any] = []
    f11 = _new_struct("VkPhysicalDeviceVulkan11Features",
                      "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES")
    f12 = _new_struct("VkPhysicalDeviceVulkan12Features",
                      "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES", f11)
    chain = [f12, f11]
    atomic = None
    if "VK_EXT_shader_atomic_float" in extensions:
        atomic = _new_struct("VkPhysicalDeviceShaderAtomicFloatFeaturesEXT",
                             "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_ATOMIC_FLOAT_FEATURES_EXT",
                             f12)
        chain.insert(0, atomic)
    head = _new_struct("VkPhysicalDeviceFeatures2",
                       "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2", chain[0])
    vk.lib.vkGetPhysicalDeviceFeatures2(handle, head)
    core = head.features
    # Enable only what qdarray uses: clear everything else in the core block.
    wanted_core = {"shaderInt64", "shaderFloat64", "shaderInt16"}
    for fname in dir(core):
        if not fname.startswith("_") and fname not in wanted_core:
            setattr(core, fname, 0)
    summary = {
        "int64": bool(core.shaderInt64),
        "float64": bool(core.shaderFloat64),
        "int16": bool(core.shaderInt16),
        "int8": bool(f12.shaderInt8),
        "storage8": bool(f12.storageBuffer8BitAccess),
        "storage16": bool(f11.storageBuffer16BitAccess),
        "int64_atomics": bool(f12.shaderBufferInt64Atomics),
        "buffer_device_address": bool(f12.bufferDeviceAddress),
        "timeline_semaphore": bool(f12.timelineSemaphore),
        "float32_atomic_add": bool(atomic is not None and atomic.shaderBufferFloat32AtomicAdd),
        "float64_atomic_add": bool(atomic is not None and atomic.shaderBufferFloat64AtomicAdd),
    }
    keep12 = {"shaderInt8", "storageBuffer8BitAccess", "shaderBufferInt64Atomics",
              "bufferDeviceAddress", "timelineSemaphore"}
    for fname in dir(f12):
        if fname not in ("sType", "pNext") and fname not in keep12:
            setattr(f12, fname, 0)
    for fname in dir(f11):
        if fname not in ("sType", "pNext", "storageBuffer16BitAccess"):
            setattr(f11, fname, 0)
    if atomic is not None:
        for fname in dir(atomic):
            if fname not in ("sType", "pNext", "shaderBufferFloat32AtomicAdd",
                             "shaderBufferFloat64AtomicAdd"):
                setattr(atomic, fname, 0)
    return (head, chain), summary


def state(index: int) -> DeviceState:
    """The logical device of `vulkan:<index>` (made on first use)."""
    with _lock:
        found = _states.get(index)
        if found is not None:
            return found
        devices = physical_devices()
        if not 0 <= index < len(devices):
            listed = ", ".join(f"vulkan:{i} ({p.name})" for i, p in enumerate(devices))
            raise ValueError(
                f"There is no Vulkan device vulkan:{index}; present: {listed or 'none'}."
                + (f" Left out: {'; '.join(_unusable)}." if _unusable else ""))
        st = _create(index, devices[index])
        _states[index] = st
        return st


def _create(index: int, p: Physical) -> DeviceState:
    vk = api()
    label = f"vulkan:{index} ({p.name})"
    exts = frozenset(text(e.extensionName)
                     for e in vk.vkEnumerateDeviceExtensionProperties(p.handle, None))
    family = _compute_family(p.handle)
    assert family is not None
    (head, chain), summary = _features(p.handle, exts)
    enable = [e for e in ("VK_EXT_shader_atomic_float", "VK_EXT_memory_budget") if e in exts]
    priorities = vk.ffi.new("float[]", [1.0])
    qinfo = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family[0], queueCount=1,
                                       pQueuePriorities=priorities)
    info = vk.VkDeviceCreateInfo(pNext=head, queueCreateInfoCount=1, pQueueCreateInfos=[qinfo],
                                 enabledExtensionCount=len(enable),
                                 ppEnabledExtensionNames=enable or vk.ffi.NULL)
    with checked(label, "vkCreateDevice"):
        device = vk.vkCreateDevice(p.handle, info, None)
    del chain  # kept alive until the device exists
    queue = vk.vkGetDeviceQueue(device, family[0], 0)
    props = vk.vkGetPhysicalDeviceProperties(p.handle)
    lim = props.limits
    limits = {name: int(getattr(lim, name)) for name in (
        "maxStorageBufferRange", "maxPushConstantsSize", "maxComputeWorkGroupInvocations",
        "maxPerStageDescriptorStorageBuffers", "minStorageBufferOffsetAlignment",
        "nonCoherentAtomSize")}
    limits["maxComputeWorkGroupCountX"] = int(lim.maxComputeWorkGroupCount[0])
    limits["maxComputeWorkGroupSizeX"] = int(lim.maxComputeWorkGroupSize[0])
    limits["maxMemoryAllocationSize"] = _max_allocation(p.handle)
    mem = vk.vkGetPhysicalDeviceMemoryProperties(p.handle)
    types = [(int(mem.memoryTypes[i].propertyFlags), int(mem.memoryTypes[i].heapIndex))
             for i in range(mem.memoryTypeCount)]
    heaps = [int(mem.memoryHeaps[i].size) for i in range(mem.memoryHeapCount)]
    local = [bool(mem.memoryHeaps[i].flags & vk.VK_MEMORY_HEAP_DEVICE_LOCAL_BIT)
             for i in range(mem.memoryHeapCount)]
    return DeviceState(index=index, name=p.name, type=p.type, physical=p.handle, device=device,
                       queue=queue, queue_family=family[0], limits=limits, features=summary,
                       extensions=exts, memory_types=types, heap_sizes=heaps,
                       heap_device_local=local, timestamp_period=float(lim.timestampPeriod),
                       timestamp_bits=family[1])


def set_override(index: int, **features: bool | None) -> None:
    """Pretend `vulkan:<index>` lacks (False) or has (True) features, None restores the
    driver's answer; tests use it to reach the paths of devices without float64 etc."""
    st = state(index)
    real = st.extra.setdefault("real_features", dict(st.features))
    for name, value in features.items():
        if name not in real:
            raise KeyError(f"unknown feature {name!r}; known: {sorted(real)}")
        st.features[name] = real[name] if value is None else value


def heap_budgets(st: DeviceState) -> list[int] | None:
    """Per-heap budgets in bytes from VK_EXT_memory_budget (what this process may still
    allocate there, as the driver estimates it), or None without the extension."""
    if "VK_EXT_memory_budget" not in st.extensions:
        return None
    vk = api()
    budget = _new_struct("VkPhysicalDeviceMemoryBudgetPropertiesEXT",
                         "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_BUDGET_PROPERTIES_EXT")
    props = _new_struct("VkPhysicalDeviceMemoryProperties2",
                        "VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MEMORY_PROPERTIES_2", budget)
    vk.lib.vkGetPhysicalDeviceMemoryProperties2(st.physical, props)
    n = len(st.heap_sizes)
    return [max(int(budget.heapBudget[i]) - int(budget.heapUsage[i]), 0) for i in range(n)]
