"""A thin, checked wrapper over the CUDA driver API (``cuda.bindings.driver``).

Every driver call goes through :func:`check`, so a failure raises
:class:`CudaError` naming the call and the CUresult instead of returning a
silent wrong answer. fuser runs on one GPU a process (as a torch.distributed rank does): the
device of the first CUDA tensor a launch is given, else ``$FUSER_DEVICE``, else 0
(``bind_device``). Its primary context is created lazily, so importing this module never
touches the GPU.
"""

from __future__ import annotations

import ctypes
import functools
import os
import re
import struct
import threading
from dataclasses import dataclass
from typing import Any, Callable, Iterable, NamedTuple, Sequence

from cuda.bindings import driver as _cu

__all__ = [
    "CudaError", "NoGPUError", "check", "gpu_available", "require_gpu", "context",
    "device", "DeviceProperties", "Module", "Kernel", "Scalar", "DeviceBuffer",
    "synchronize", "time_fn", "stream_handle",
]

_LOG_BYTES = 64 * 1024          # JIT info/error log buffers
_SMEM_DEFAULT_LIMIT = 48 * 1024  # dynamic smem above this needs an opt-in attribute


class CudaError(RuntimeError):
    """A CUDA driver call failed. ``call`` names it, ``result`` is the CUresult code."""

    def __init__(self, message: str, call: str = "", result: int = 0):
        super().__init__(message)
        self.call = call
        self.result = result


class NoGPUError(RuntimeError):
    """No NVIDIA GPU or driver on this machine."""


def _error_text(err: Any) -> str:
    """'CUDA_ERROR_X (n): description' for a CUresult, robust to lookup failures."""
    code = int(err)
    try:
        name = _cu.CUresult(code).name
    except Exception:
        name = "CUDA_ERROR_UNKNOWN_CODE"
    desc = ""
    try:
        e2, s = _cu.cuGetErrorString(_cu.CUresult(code))
        if int(e2) == 0 and s:
            desc = s.decode(errors="replace") if isinstance(s, bytes) else str(s)
    except Exception:
        pass
    return f"{name} ({code}): {desc}" if desc else f"{name} ({code})"


def check(res: tuple, call: str) -> Any:
    """Raise CudaError if ``res[0]`` is not CUDA_SUCCESS, else return the results.

    cuda.bindings returns ``(CUresult, *outputs)``; this returns None, the single
    output, or a tuple of outputs.
    """
    err = res[0]
    if err:  # CUresult is an int subclass; CUDA_SUCCESS == 0
        raise CudaError(f"{call} failed: {_error_text(err)}", call, int(err))
    n = len(res)
    if n == 1:
        return None
    if n == 2:
        return res[1]
    return res[1:]


# --------------------------------------------------------------------------- init

_lock = threading.Lock()
_tls = threading.local()
_state: dict[str, Any] = {}   # "ctx", "dev", "props" once initialized; "no_gpu" on failure


def bind_device(ordinal: int) -> int:
    """Make GPU `ordinal` the one this process's fuser runs on, unless one is chosen already;
    the chosen one. One GPU a process, as a torch.distributed rank has: the first CUDA tensor a
    launch is given chooses it (else $FUSER_DEVICE, else 0), and a tensor on another GPU is refused."""
    with _lock:
        return _state.setdefault("ordinal", ordinal)


def device_ordinal() -> int:
    """The GPU this process's fuser runs on (chosen now if no launch chose it yet)."""
    return bind_device(_default_ordinal())


def _default_ordinal() -> int:
    text = os.environ.get("FUSER_DEVICE", "").strip()
    if not text:
        return 0
    if not text.isdigit():
        raise CudaError(f"FUSER_DEVICE={text!r} is not a GPU number (0, 1, ...)")
    return int(text)


def _init() -> None:
    """cuInit + retain the chosen device's primary context (device_ordinal), once per process."""
    if "ctx" in _state:
        return
    with _lock:
        if "ctx" in _state:
            return
        if "no_gpu" in _state:
            raise NoGPUError(_state["no_gpu"])
        try:
            res = _cu.cuInit(0)
        except (RuntimeError, OSError, ImportError) as e:
            # DynamicLibNotFoundError (a RuntimeError) or "Failed to dlopen libcuda.so.1"
            msg = f"no NVIDIA GPU/driver found: the CUDA driver library could not be loaded (cuInit: {e})"
            _state["no_gpu"] = msg
            raise NoGPUError(msg) from None
        if res[0]:
            msg = f"no NVIDIA GPU/driver found: the driver did not initialize (cuInit: {_error_text(res[0])})"
            _state["no_gpu"] = msg
            raise NoGPUError(msg)
        count = check(_cu.cuDeviceGetCount(), "cuDeviceGetCount")
        if count < 1:
            msg = "no NVIDIA GPU/driver found: the driver reports no device (cuInit: CUDA_SUCCESS, 0 devices)"
            _state["no_gpu"] = msg
            raise NoGPUError(msg)
        ordinal = _state.get("ordinal", None)
        if ordinal is None:
            ordinal = _state["ordinal"] = _default_ordinal()
        if ordinal >= count:
            raise CudaError(f"fuser was asked to run on GPU {ordinal} (FUSER_DEVICE or the first tensor), "
                            f"but the driver reports {count} device{'s' if count != 1 else ''}")
        dev = check(_cu.cuDeviceGet(ordinal), "cuDeviceGet")
        ctx = check(_cu.cuDevicePrimaryCtxRetain(dev), "cuDevicePrimaryCtxRetain")
        _state["dev"] = dev
        _state["ctx"] = ctx


def gpu_available() -> bool:
    """True when a CUDA driver and at least one device are present."""
    try:
        _init()
        return True
    except (NoGPUError, CudaError):
        return False


def require_gpu() -> None:
    """Raise NoGPUError with a plain message when there is no usable GPU."""
    _init()


def context() -> Any:
    """The primary context of the chosen device (device_ordinal), made current on the calling thread."""
    ctx = getattr(_tls, "ctx", None)
    if ctx is None:
        _init()
        ctx = _state["ctx"]
        check(_cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
        _tls.ctx = ctx
    return ctx


@dataclass(frozen=True)
class DeviceProperties:
    name: str
    cc: tuple[int, int]
    sm_count: int
    max_smem_per_block_optin: int
    l2_size: int
    total_mem: int

    @property
    def arch(self) -> str:
        """PTX target name; Hopper gets the 'a' variant (wgmma, setmaxnreg)."""
        major, minor = self.cc
        return f"sm_{major}{minor}" + ("a" if major == 9 else "")


def device() -> DeviceProperties:
    """Properties of the chosen device (queried once)."""
    props = _state.get("props")
    if props is None:
        context()
        dev = _state["dev"]
        A = _cu.CUdevice_attribute

        def attr(a: Any) -> int:
            return int(check(_cu.cuDeviceGetAttribute(a, dev), "cuDeviceGetAttribute"))

        raw = check(_cu.cuDeviceGetName(256, dev), "cuDeviceGetName")
        name = raw.split(b"\0", 1)[0].decode(errors="replace") if isinstance(raw, bytes) else str(raw)
        props = DeviceProperties(
            name=name,
            cc=(attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
                attr(A.CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)),
            sm_count=attr(A.CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
            max_smem_per_block_optin=attr(A.CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN),
            l2_size=attr(A.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
            total_mem=int(check(_cu.cuDeviceTotalMem(dev), "cuDeviceTotalMem")),
        )
        _state["props"] = props
    return props


def synchronize() -> None:
    """Wait for all work in the context (surfaces asynchronous kernel faults)."""
    context()
    check(_cu.cuCtxSynchronize(), "cuCtxSynchronize")


_streams: dict[int, Any] = {}


def stream_handle(stream: Any = 0) -> Any:
    """A CUstream for an int handle (0 = legacy default stream), a CUstream, or an
    object with ``cuda_stream`` (torch) / ``ptr`` (cupy). Int handles are memoized."""
    if isinstance(stream, _cu.CUstream):
        return stream
    if not isinstance(stream, int):
        raw = getattr(stream, "cuda_stream", None)
        if raw is None:
            raw = getattr(stream, "ptr", None)
        if raw is None:
            raise TypeError(f"not a CUDA stream: {stream!r}")
        stream = int(raw)
    h = _streams.get(stream)
    if h is None:
        h = _streams[stream] = _cu.CUstream(stream)
    return h


# ------------------------------------------------------------------------- modules

_ENTRY_RE = re.compile(r"\.entry\s+([A-Za-z_$][\w$]*)")


class Module:
    """A loaded CUDA module (PTX JIT-compiled by the driver)."""

    def __init__(self, handle: Any, entries: Sequence[str] = ()):
        self.handle = handle
        self.entries = tuple(entries)

    @classmethod
    def load_ptx(cls, ptx: str) -> "Module":
        context()
        image = ptx.encode() + b"\0"   # the driver reads a NUL-terminated string
        info = bytearray(_LOG_BYTES)
        error = bytearray(_LOG_BYTES)
        O = _cu.CUjit_option
        # Line info: the PTX's .loc lines become the cubin's line table, so compute-sanitizer and
        # Nsight Compute name the .mlir line of an instruction (no change to the code).
        opts = [O.CU_JIT_INFO_LOG_BUFFER, O.CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                O.CU_JIT_ERROR_LOG_BUFFER, O.CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES, O.CU_JIT_GENERATE_LINE_INFO]
        vals = [info, _LOG_BYTES, error, _LOG_BYTES, 1]
        res = _cu.cuModuleLoadDataEx(image, len(opts), opts, vals)
        if res[0]:
            log = _c_string(error) or _c_string(info)
            msg = f"cuModuleLoadDataEx failed: {_error_text(res[0])}"
            msg += f"\nJIT log:\n{log}" if log else "\nJIT log: (empty)"
            raise CudaError(msg, "cuModuleLoadDataEx", int(res[0]))
        return cls(res[1], _ENTRY_RE.findall(ptx))

    @classmethod
    def load_cubin(cls, cubin: bytes, ptx: str) -> "Module":
        """The module of a cubin assembled from `ptx` (runtime/cubins.py; the PTX names its
        entries); raises CudaError when the driver refuses it (another GPU's code)."""
        context()
        res = _cu.cuModuleLoadData(cubin)
        if res[0]:
            raise CudaError(f"cuModuleLoadData (cubin) failed: {_error_text(res[0])}", "cuModuleLoadData", int(res[0]))
        return cls(res[1], _ENTRY_RE.findall(ptx))

    def function(self, name: str) -> "Kernel":
        context()
        res = _cu.cuModuleGetFunction(self.handle, name.encode())
        if res[0]:
            have = ", ".join(self.entries) or "none found in the PTX"
            raise CudaError(
                f"kernel '{name}' not found in the module (cuModuleGetFunction: "
                f"{_error_text(res[0])}); entries: {have}",
                "cuModuleGetFunction", int(res[0]))
        return Kernel(res[1], name, self)

    def unload(self) -> None:
        if self.handle is not None:
            context()
            check(_cu.cuModuleUnload(self.handle), "cuModuleUnload")
            self.handle = None

    def __del__(self) -> None:
        try:
            self.unload()
        except Exception:
            pass  # at interpreter exit the driver may already be gone


def _c_string(buf: bytearray) -> str:
    return bytes(buf).split(b"\0", 1)[0].decode(errors="replace").strip()


# -------------------------------------------------------------------------- launch

class Scalar(NamedTuple):
    """A by-value kernel argument with a declared PTX-level type."""
    value: Any
    dtype: str  # f32 f64 f16 bf16 i1 i8 i16 i32 i64 u32 u64


def _f32_bits(v: float) -> int:
    return struct.unpack("<I", struct.pack("<f", float(v)))[0]


def _bf16_bits(v: float) -> int:
    b = _f32_bits(v)
    if (b & 0x7F800000) == 0x7F800000 and (b & 0x7FFFFF):
        return 0x7FC0  # NaN
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF  # round to nearest even


_PACK: dict[str, Callable[[Any], int]] = {
    "f32": _f32_bits,
    "f64": lambda v: struct.unpack("<Q", struct.pack("<d", float(v)))[0],
    "f16": lambda v: struct.unpack("<H", struct.pack("<e", float(v)))[0],
    "bf16": _bf16_bits,
    "i1": lambda v: 1 if v else 0,
    "i8": lambda v: int(v) & 0xFF,
    "i16": lambda v: int(v) & 0xFFFF,
    "i32": lambda v: int(v) & 0xFFFFFFFF,
    "u32": lambda v: int(v) & 0xFFFFFFFF,
    "i64": lambda v: int(v) & 0xFFFFFFFFFFFFFFFF,
    "u64": lambda v: int(v) & 0xFFFFFFFFFFFFFFFF,
}


def pack_arg(a: Any) -> int:
    """One kernel argument as the 64-bit little-endian slot the driver copies from.

    Ints are device pointers; Scalar/(value, dtype) are typed values; objects with
    an int ``ptr`` (DeviceBuffer) pass their pointer. The driver copies only the
    parameter's own size from the slot, so narrow values live in its low bytes.
    """
    if isinstance(a, int) and not isinstance(a, bool):
        return a & 0xFFFFFFFFFFFFFFFF
    if isinstance(a, tuple) and len(a) == 2 and isinstance(a[1], str):
        pack = _PACK.get(a[1])
        if pack is None:
            raise TypeError(f"unknown scalar kernel-argument type {a[1]!r}; known: {sorted(_PACK)}")
        return pack(a[0])
    ptr = getattr(a, "ptr", None)
    if isinstance(ptr, int):
        return ptr
    raise TypeError(
        f"kernel argument {a!r}: pass a device pointer (int), a DeviceBuffer, or "
        f"Scalar(value, dtype) for by-value arguments")


class ParamBlock:
    """A reusable kernelParams array: ``n`` u64 slots and a void* array pointing at them.

    Slots listed in ``wide`` (slot -> bytes) point instead at their own 64-byte-aligned buffer of
    that size (a CUtensorMap passed by value is 128 bytes); ``wide_address(slot)`` is where to
    write it.
    """

    def __init__(self, n: int, wide: dict[int, int] | None = None):
        self.values = (ctypes.c_uint64 * max(n, 1))()
        base = ctypes.addressof(self.values)
        addrs = [base + 8 * i for i in range(max(n, 1))]
        self._wide: dict[int, Any] = {}
        for slot, size in (wide or {}).items():
            raw = (ctypes.c_uint8 * (size + 64))()
            addr = (ctypes.addressof(raw) + 63) & ~63
            self._wide[slot] = (raw, addr, size)
            addrs[slot] = addr
        self.ptrs = (ctypes.c_void_p * max(n, 1))(*addrs)
        self.address = ctypes.addressof(self.ptrs) if n else None

    def wide_address(self, slot: int) -> int:
        return self._wide[slot][1]

    def wide_view(self, slot: int) -> memoryview:
        """The bytes of wide slot `slot`, to copy into (a memoryview's slice assignment costs a
        tenth of a ctypes.memmove call)."""
        raw, addr, size = self._wide[slot]
        start = addr - ctypes.addressof(raw)
        return memoryview(raw).cast("B")[start:start + size]


# (FP8 tensors are bytes to TMA: it has no float8 element type and copies them unchanged)
_TMAP_DTYPES = {"bf16": "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16", "f16": "CU_TENSOR_MAP_DATA_TYPE_FLOAT16",
                "f32": "CU_TENSOR_MAP_DATA_TYPE_FLOAT32", "f8e4m3fn": "CU_TENSOR_MAP_DATA_TYPE_UINT8",
                "f8e5m2": "CU_TENSOR_MAP_DATA_TYPE_UINT8"}
_TMAP_SWIZZLE = {0: "CU_TENSOR_MAP_SWIZZLE_NONE", 32: "CU_TENSOR_MAP_SWIZZLE_32B",
                 64: "CU_TENSOR_MAP_SWIZZLE_64B", 128: "CU_TENSOR_MAP_SWIZZLE_128B"}
_TMAP_ELEM = {"bf16": 2, "f16": 2, "f32": 4, "f8e4m3fn": 1, "f8e5m2": 1}


def encode_tensor_map(ptr: int, shape: Sequence[int], dtype: str, box: Sequence[int], swizzle: int) -> bytes:
    """The 128 bytes of a tiled CUtensorMap (cuTensorMapEncodeTiled) for a dense row-major
    buffer at device address ``ptr``; ``shape`` and ``box`` are outermost first. Out-of-bounds
    elements of a box read as zero."""
    context()
    fields = _tensor_map_fields(tuple(int(d) for d in shape), dtype, tuple(int(b) for b in box), int(swizzle))
    encode = _direct_encode()
    if encode is not None:  # (a GPT-2 step encodes ~100 maps: cuda.bindings' call took ~10 us of each)
        out = (ctypes.c_uint8 * 192)()  # (a CUtensorMap is 64-byte aligned)
        addr = (ctypes.addressof(out) + 63) & ~63
        check_direct(encode(addr, fields.dtype, fields.rank, ptr, fields.dims, fields.strides, fields.box,
                        fields.element_strides, fields.interleave, fields.swizzle, fields.l2, fields.oob),
                     "cuTensorMapEncodeTiled")
        return ctypes.string_at(addr, 128)
    T = _cu
    args = (T.CUtensorMapDataType(fields.dtype), fields.rank, ptr,
            [T.cuuint64_t(d) for d in fields.dims], [T.cuuint64_t(s) for s in fields.strides],
            [T.cuuint32_t(b) for b in fields.box], [T.cuuint32_t(1)] * fields.rank,
            T.CUtensorMapInterleave(fields.interleave), T.CUtensorMapSwizzle(fields.swizzle),
            T.CUtensorMapL2promotion(fields.l2), T.CUtensorMapFloatOOBfill(fields.oob))
    tmap = check(T.cuTensorMapEncodeTiled(*args), "cuTensorMapEncodeTiled")
    opaque = getattr(tmap, "opaque", None)
    if opaque is not None:
        return struct.pack("<16Q", *[int(x) for x in opaque])
    return ctypes.string_at(int(tmap.getPtr()), 128)


class _TensorMapFields(NamedTuple):
    """cuTensorMapEncodeTiled's arguments but the address: enums as ints, the arrays in ctypes
    (innermost dim first, as the driver takes them)."""
    dtype: int
    rank: int
    dims: Any
    strides: Any
    box: Any
    element_strides: Any
    interleave: int
    swizzle: int
    l2: int
    oob: int


@functools.lru_cache(maxsize=1024)
def _tensor_map_fields(shape: tuple, dtype: str, box: tuple, swizzle: int) -> _TensorMapFields:
    e = _TMAP_ELEM[dtype]
    rank = len(shape)
    dims = list(reversed(shape))
    strides, acc = [], e
    for d in dims[:-1]:
        acc *= d
        strides.append(acc)
    T = _cu
    return _TensorMapFields(
        int(getattr(T.CUtensorMapDataType, _TMAP_DTYPES[dtype])), rank,
        (ctypes.c_uint64 * rank)(*dims), (ctypes.c_uint64 * max(rank - 1, 1))(*strides),
        (ctypes.c_uint32 * rank)(*reversed(box)), (ctypes.c_uint32 * rank)(*([1] * rank)),
        int(T.CUtensorMapInterleave.CU_TENSOR_MAP_INTERLEAVE_NONE),
        int(getattr(T.CUtensorMapSwizzle, _TMAP_SWIZZLE[swizzle])),
        int(T.CUtensorMapL2promotion.CU_TENSOR_MAP_L2_PROMOTION_L2_256B),
        int(T.CUtensorMapFloatOOBfill.CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE))


def check_direct(err: int, call: str) -> None:
    """Raise CudaError for a CUresult returned by a direct (ctypes) driver call."""
    if err:
        raise CudaError(f"{call} failed: {_error_text(err)}", call, int(err))


def _dim3(d: Any, what: str) -> tuple[int, int, int]:
    t = (d,) if isinstance(d, int) else tuple(int(x) for x in d)
    if not 1 <= len(t) <= 3 or any(x < 1 for x in t):
        raise ValueError(f"{what} must be 1-3 positive ints, got {d!r}")
    return t + (1,) * (3 - len(t))  # type: ignore[return-value]


class Kernel:
    """A kernel entry point of a loaded Module."""

    def __init__(self, handle: Any, name: str, module: Module):
        self.handle = handle
        self.name = name
        self.module = module  # keep the module loaded while the kernel lives
        self._configs: dict[tuple, Any] = {}  # launch configs (clusters, dependent launches) by shape and stream
        self._direct_configs: dict[tuple, _DirectConfig] = {}  # the same, for the direct path
        try:  # the CUfunction's value, for the direct path
            self.raw = int(handle)
        except TypeError:
            self.raw = None

    def max_active_per_sm(self, threads: int, smem: int) -> int:
        """How many CTAs of `threads` threads and `smem` bytes of dynamic shared memory one SM holds."""
        context()
        return int(check(_cu.cuOccupancyMaxActiveBlocksPerMultiprocessor(self.handle, int(threads), int(smem)),
                         "cuOccupancyMaxActiveBlocksPerMultiprocessor"))

    def set_max_dynamic_smem(self, nbytes: int) -> None:
        """Opt in to more than 48 KB of dynamic shared memory."""
        context()
        check(_cu.cuFuncSetAttribute(
            self.handle, _cu.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
            int(nbytes)), "cuFuncSetAttribute")

    def launch(self, grid: Any, block: Any, smem: int = 0, args: Iterable[Any] = (),
               stream: Any = 0, cluster: Any = None, dependent: bool = False) -> None:
        """Launch with device pointers (ints) and Scalar(value, dtype) arguments. `dependent`:
        programmatic dependent launch (the kernel waits in `griddepcontrol.wait` for the one
        launched before it on the stream, which may still be running when this one starts)."""
        args = list(args)
        params = ParamBlock(len(args))
        for i, a in enumerate(args):
            params.values[i] = pack_arg(a)
        self.launch_raw(_dim3(grid, "grid"), _dim3(block, "block"), int(smem),
                        stream_handle(stream), params.address,
                        None if cluster is None else _dim3(cluster, "cluster"), dependent)

    def launcher(self, grid: tuple, block: tuple, smem: int, params_address: int | None,
                 cluster: tuple | None = None, dependent: bool = False) -> Callable[[int], None]:
        """`go(stream)`: this kernel's launch with everything but the stream (an int handle) bound,
        for a launch made again and again (a cached call). On the direct path it is the one
        ctypes call (a cluster or dependent launch's CUlaunchConfig is made once per stream);
        otherwise `launch_raw`."""
        direct = _direct() if self.raw is not None else None
        if direct is None:
            def go(stream: int) -> None:
                self.launch_raw(grid, block, smem, stream_handle(stream), params_address, cluster, dependent)
            return go
        raw, name = self.raw, self.name
        if cluster is None and not dependent:
            fn = direct.launch
            (gx, gy, gz), (bx, by, bz) = grid, block

            def go(stream: int) -> None:
                err = fn(raw, gx, gy, gz, bx, by, bz, smem, stream, params_address, None)
                if err:
                    raise CudaError(f"cuLaunchKernel failed ({name}): {_error_text(err)}", "cuLaunchKernel", int(err))
            return go
        fn_ex, configs = direct.launch_ex, {}

        def go(stream: int) -> None:
            cfg = configs.get(stream)
            if cfg is None:  # (kept: the struct must outlive its launches)
                cfg = configs[stream] = _DirectConfig(grid, block, smem, stream, cluster, dependent)
            err = fn_ex(cfg.address, raw, params_address, None)
            if err:
                raise CudaError(f"cuLaunchKernelEx failed ({name}): {_error_text(err)}", "cuLaunchKernelEx", int(err))
        return go

    def launch_raw(self, grid: tuple, block: tuple, smem: int, stream: Any,
                   params_address: int | None, cluster: tuple | None = None, dependent: bool = False) -> None:
        """The hot path: dims already normalized, params already packed; `stream` a CUstream or
        its int handle."""
        if getattr(_tls, "ctx", None) is None:
            context()
        direct = _direct() if self.raw is not None else None
        if direct is not None:
            raw = stream if type(stream) is int else int(stream)
            if cluster is None and not dependent:
                err = direct.launch(self.raw, *grid, *block, smem, raw, params_address, None)
            else:
                key = (grid, block, smem, raw, cluster, dependent)
                cfg = self._direct_configs.get(key)
                if cfg is None:
                    cfg = self._direct_configs[key] = _DirectConfig(grid, block, smem, raw, cluster, dependent)
                err = direct.launch_ex(cfg.address, self.raw, params_address, None)
            if err:
                call = "cuLaunchKernel" if cluster is None and not dependent else "cuLaunchKernelEx"
                raise CudaError(f"{call} failed ({self.name}): {_error_text(err)}", call, int(err))
            return
        if cluster is None and not dependent:
            err = _cu.cuLaunchKernel(self.handle, grid[0], grid[1], grid[2],
                                     block[0], block[1], block[2], smem, stream,
                                     params_address, 0)[0]
            if err:
                raise CudaError(f"cuLaunchKernel failed ({self.name}): {_error_text(err)}",
                                "cuLaunchKernel", int(err))
            return
        key = (grid, block, smem, int(stream), cluster, dependent)
        cfg = self._configs.get(key)
        if cfg is None:  # (building one costs a few us of host time: kept per launch shape and stream)
            cfg = self._configs[key] = launch_config(grid, block, smem, stream, cluster, dependent)
        check(_cu.cuLaunchKernelEx(cfg, self.handle, params_address, 0), f"cuLaunchKernelEx ({self.name})")


# -------------------------------------------------------------- direct launches

class _LaunchAttribute(ctypes.Structure):
    """CUlaunchAttribute (cuda.h): an enum id, padding to 8 bytes, a 64-byte value union."""
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_uint32 * 16)]


class _LaunchConfigStruct(ctypes.Structure):
    """CUlaunchConfig (cuda.h)."""
    _fields_ = [("grid", ctypes.c_uint * 3), ("block", ctypes.c_uint * 3), ("sharedMemBytes", ctypes.c_uint),
                ("hStream", ctypes.c_void_p), ("attrs", ctypes.POINTER(_LaunchAttribute)),
                ("numAttrs", ctypes.c_uint)]


class _DirectConfig:
    """A CUlaunchConfig in ctypes memory with its attributes (kept alive together)."""

    def __init__(self, grid: tuple, block: tuple, smem: int, stream: int, cluster: tuple | None, dependent: bool):
        ids = _cu.CUlaunchAttributeID
        attrs = []
        if cluster is not None:
            attrs.append((int(ids.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION), cluster))
        if dependent:
            attrs.append((int(ids.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION), (1,)))
        self.attrs = (_LaunchAttribute * max(len(attrs), 1))()
        for a, (aid, words) in zip(self.attrs, attrs):
            a.id = aid
            for i, w in enumerate(words):  # clusterDim {x, y, z} / the int flag: u32 words from the start
                a.value[i] = w
        self.struct = _LaunchConfigStruct((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), smem, stream,
                                          ctypes.cast(self.attrs, ctypes.POINTER(_LaunchAttribute)), len(attrs))
        self.address = ctypes.addressof(self.struct)


class _Direct(NamedTuple):
    launch: Callable[..., int]
    launch_ex: Callable[..., int]


_direct_state: list = []


def _direct() -> _Direct | None:
    """cuLaunchKernel and cuLaunchKernelEx of libcuda called through ctypes, or None (then
    cuda.bindings launches). A launch through cuda.bindings converts each of its eleven
    arguments to a driver type, about 8 us per launch under cProfile (H100 host, 2026-11-26); a
    GPT-2 training step makes ~520 launches. FUSER_LAUNCH=bindings turns the direct path off."""
    if _direct_state:
        return _direct_state[0]
    direct = None
    lib = _libcuda()
    if lib is not None:
        launch, launch_ex = lib.cuLaunchKernel, lib.cuLaunchKernelEx
        u, p = ctypes.c_uint, ctypes.c_void_p
        launch.argtypes = [p, u, u, u, u, u, u, u, p, p, p]
        launch.restype = ctypes.c_int
        launch_ex.argtypes = [p, p, p, p]
        launch_ex.restype = ctypes.c_int
        direct = _Direct(launch, launch_ex)
    _direct_state.append(direct)
    return direct


@functools.lru_cache(maxsize=None)
def _libcuda() -> Any:
    """libcuda through ctypes for the direct calls, or None (not found, or FUSER_LAUNCH=bindings)."""
    if os.environ.get("FUSER_LAUNCH", "").strip().lower() == "bindings":
        return None
    try:
        lib = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    calls = ("cuLaunchKernel", "cuLaunchKernelEx", "cuTensorMapEncodeTiled")
    return lib if all(hasattr(lib, c) for c in calls) else None


@functools.lru_cache(maxsize=None)
def _direct_encode() -> Callable[..., int] | None:
    """cuTensorMapEncodeTiled of libcuda through ctypes, or None (cuda.bindings encodes)."""
    lib = _libcuda()
    if lib is None:
        return None
    fn = lib.cuTensorMapEncodeTiled
    p, i, u32 = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32
    p64, p32 = ctypes.POINTER(ctypes.c_uint64), ctypes.POINTER(ctypes.c_uint32)
    fn.argtypes = [p, i, u32, p, p64, p64, p32, p32, i, i, i, i]
    fn.restype = ctypes.c_int
    return fn


def launch_config(grid: tuple, block: tuple, smem: int, stream: Any, cluster: tuple | None = None,
                  dependent: bool = False) -> Any:
    """A CUlaunchConfig with a cluster-dimension attribute (`cluster`) and/or programmatic
    stream serialization (`dependent`)."""
    cfg = _cu.CUlaunchConfig()
    cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid
    cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = block
    cfg.sharedMemBytes = smem
    cfg.hStream = stream
    attrs = []
    if cluster is not None:
        attr = _cu.CUlaunchAttribute()
        attr.id = _cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster
        attrs.append(attr)
    if dependent:
        attr = _cu.CUlaunchAttribute()
        attr.id = _cu.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        attrs.append(attr)
    cfg.attrs = attrs
    cfg.numAttrs = len(attrs)
    return cfg


# -------------------------------------------------------------------------- memory

class DeviceBuffer:
    """Device memory, freed on ``free()`` or garbage collection.

    By default cuMemAlloc/cuMemFree. With ``stream`` it is stream-ordered
    (cuMemAllocAsync/cuMemFreeAsync on that stream): no device-wide sync on free,
    which keeps per-call output allocation off the critical path.
    """

    def __init__(self, nbytes: int, stream: Any = None):
        self.size = int(nbytes)
        self.ptr = 0
        self._stream = None
        if self.size > 0:  # cuMemAlloc(0) is an error; an empty buffer has no memory
            context()
            if stream is None:
                self.ptr = int(check(_cu.cuMemAlloc(self.size), "cuMemAlloc"))
            else:
                self._stream = stream_handle(stream)
                self.ptr = int(check(_cu.cuMemAllocAsync(self.size, self._stream), "cuMemAllocAsync"))

    def _check_host(self, arr: Any, what: str) -> None:
        if not arr.flags.c_contiguous:
            raise ValueError(f"{what}: host array must be C-contiguous")
        if arr.nbytes > self.size:
            raise ValueError(f"{what}: {arr.nbytes} bytes do not fit a {self.size}-byte buffer")

    def copy_from_host(self, arr: Any) -> None:
        self._check_host(arr, "copy_from_host")
        if arr.nbytes:
            context()
            check(_cu.cuMemcpyHtoD(self.ptr, arr.ctypes.data, arr.nbytes), "cuMemcpyHtoD")

    def copy_to_host(self, arr: Any) -> Any:
        self._check_host(arr, "copy_to_host")
        if not arr.flags.writeable:
            raise ValueError("copy_to_host: host array is read-only")
        if arr.nbytes:
            context()
            check(_cu.cuMemcpyDtoH(arr.ctypes.data, self.ptr, arr.nbytes), "cuMemcpyDtoH")
        return arr

    def memset_zero(self, stream: Any = None) -> None:
        """Zero the buffer; asynchronously on ``stream`` when one is given."""
        if not self.size:
            return
        context()
        if stream is None:
            check(_cu.cuMemsetD8(self.ptr, 0, self.size), "cuMemsetD8")
        else:
            check(_cu.cuMemsetD8Async(self.ptr, 0, self.size, stream_handle(stream)),
                  "cuMemsetD8Async")

    def free(self) -> None:
        ptr, self.ptr = self.ptr, 0
        if ptr:
            context()
            if self._stream is None:
                check(_cu.cuMemFree(ptr), "cuMemFree")
            else:
                check(_cu.cuMemFreeAsync(ptr, self._stream), "cuMemFreeAsync")

    def __del__(self) -> None:
        try:
            self.free()
        except Exception:
            pass  # at interpreter exit the driver may already be gone

    def __repr__(self) -> str:
        return f"DeviceBuffer(ptr=0x{self.ptr:x}, size={self.size})"


# -------------------------------------------------------------------------- timing

def time_fn(fn: Callable[[], Any], warmup: int = 3, reps: int = 20, stream: Any = 0) -> list[float]:
    """Milliseconds per call of ``fn`` measured with CUDA events on ``stream``.

    Events bracket each call; the result is read after one synchronize, so the host
    keeps queueing work between calls as it would in real use.
    """
    context()
    s = stream_handle(stream)
    for _ in range(warmup):
        fn()
    flag = _cu.CUevent_flags.CU_EVENT_DEFAULT
    events = [check(_cu.cuEventCreate(flag), "cuEventCreate") for _ in range(2 * reps)]
    try:
        for i in range(reps):
            check(_cu.cuEventRecord(events[2 * i], s), "cuEventRecord")
            fn()
            check(_cu.cuEventRecord(events[2 * i + 1], s), "cuEventRecord")
        check(_cu.cuEventSynchronize(events[-1]), "cuEventSynchronize")
        return [float(check(_cu.cuEventElapsedTime(events[2 * i], events[2 * i + 1]),
                            "cuEventElapsedTime")) for i in range(reps)]
    finally:
        for e in events:
            _cu.cuEventDestroy(e)


def wait_on_foreign_stream(foreign: int, stream: Any = 0) -> None:
    """Make ``stream`` wait for work already queued on another stream handle."""
    context()
    ev = check(_cu.cuEventCreate(_cu.CUevent_flags.CU_EVENT_DISABLE_TIMING), "cuEventCreate")
    try:
        check(_cu.cuEventRecord(ev, stream_handle(foreign)), "cuEventRecord")
        check(_cu.cuStreamWaitEvent(stream_handle(stream), ev, 0), "cuStreamWaitEvent")
    finally:
        check(_cu.cuEventDestroy(ev), "cuEventDestroy")
