"""Kernel arguments: validation and conversion of user arrays, and output allocation.

Accepted inputs: numpy arrays (copied to the device), torch tensors (CUDA: no copy;
CPU: copied), objects with ``__cuda_array_interface__`` (cupy, numba, our
DeviceArray) and DLPack producers (``__dlpack__``/``__dlpack_device__``), all
without copies when on the device. Everything is validated before any GPU call, so
argument errors are reported the same way on a machine without a GPU.

Outputs come back in the kind of the first input: numpy -> numpy, torch -> torch
(same device), cupy -> cupy, anything else -> :class:`DeviceArray`.
"""

from __future__ import annotations

import ctypes
import math
import sys
from typing import Any, Sequence

import numpy as np

from .plan import DTYPES, BufferSpec, tensor_type_str

__all__ = ["ArgumentError", "DeviceArray", "numpy_dtype", "convert_arg", "check_count",
           "describe", "allocate_outputs", "Converted", "as_layout"]


class ArgumentError(ValueError):
    """A call's arguments do not match the compiled signature."""


# ------------------------------------------------------------------------- dtypes

def _bf16() -> Any:
    try:
        import ml_dtypes  # optional: numpy has no bfloat16 of its own
        return np.dtype(ml_dtypes.bfloat16)
    except ImportError:
        return None


def _fp8() -> dict[str, Any]:
    try:
        import ml_dtypes  # (numpy has no float8 types of its own)
        return {"f8e4m3fn": np.dtype(ml_dtypes.float8_e4m3fn), "f8e5m2": np.dtype(ml_dtypes.float8_e5m2)}
    except ImportError:
        return {}


# The types numpy and torch's .numpy() lack, reinterpreted through an integer of their width.
_BITS_VIEW = {"bf16": "int16", "f8e4m3fn": "uint8", "f8e5m2": "uint8"}

_NP: dict[str, Any] = {"f32": np.dtype(np.float32), "f16": np.dtype(np.float16), "f64": np.dtype(np.float64),
                       "i1": np.dtype(np.bool_), "i8": np.dtype(np.int8), "i16": np.dtype(np.int16),
                       "i32": np.dtype(np.int32), "i64": np.dtype(np.int64), "u8": np.dtype(np.uint8),
                       "bf16": _bf16(), **_fp8()}

# __cuda_array_interface__ typestrs; bf16 has no standard one, "<V2" is what
# ml_dtypes' bfloat16 reports and what DeviceArray exports.
_CAI_TYPESTR = {"f32": "<f4", "f16": "<f2", "f64": "<f8", "i1": "|b1", "i8": "|i1", "i16": "<i2", "i32": "<i4",
                "i64": "<i8", "u8": "|u1", "bf16": "<V2", "f8e4m3fn": "|V1", "f8e5m2": "|V1"}
# (the two FP8 types share "|V1": an FP8 array is not told apart through the interface, so
# "|V1" names no type here; DLPack carries their codes)
_CAI_DTYPE = {v: k for k, v in _CAI_TYPESTR.items() if v != "|V1"} | {"|V2": "bf16"}

# DLPack (code, bits) -> dtype name. kDLInt=0 kDLUInt=1 kDLFloat=2 kDLBfloat=4 kDLBool=6
# kDLFloat8_e4m3fn=10 kDLFloat8_e5m2=12 (DLPack 1.1)
_DL_DTYPE = {(2, 32): "f32", (2, 16): "f16", (2, 64): "f64", (4, 16): "bf16", (6, 8): "i1",
             (0, 8): "i8", (0, 16): "i16", (0, 32): "i32", (0, 64): "i64", (1, 8): "u8",
             (10, 8): "f8e4m3fn", (12, 8): "f8e5m2"}
_DL_CPU, _DL_CUDA, _DL_CUDA_MANAGED = 1, 2, 13


def numpy_dtype(name: str) -> Any:
    dt = _NP.get(name)
    if dt is None:
        if name == "bf16":
            raise ArgumentError("bf16 on the host needs the 'ml_dtypes' package (pip install ml_dtypes)")
        raise ArgumentError(f"unsupported dtype {name!r}; supported: {', '.join(DTYPES)}")
    return dt


_torch_dtypes: dict[str, Any] = {}


def torch_dtype(name: str) -> Any:
    if not _torch_dtypes:
        import torch
        _torch_dtypes.update(f32=torch.float32, f16=torch.float16, bf16=torch.bfloat16, f64=torch.float64,
                             i1=torch.bool, i8=torch.int8, i16=torch.int16, i32=torch.int32, i64=torch.int64,
                             u8=torch.uint8, f8e4m3fn=torch.float8_e4m3fn, f8e5m2=torch.float8_e5m2)
    return _torch_dtypes[name]


def _c_strides(shape: Sequence[int], itemsize: int) -> list[int]:
    out, acc = [], itemsize
    for d in reversed(shape):
        out.append(acc)
        acc *= max(int(d), 1)
    return out[::-1]


def _is_c_contiguous(shape: Sequence[int], strides: Sequence[int] | None, itemsize: int) -> bool:
    """Byte strides describe a dense row-major layout (size-1 dims may have any stride)."""
    if strides is None or math.prod(shape) == 0:
        return True
    want = _c_strides(shape, itemsize)
    return all(d == 1 or s == w for d, s, w in zip(shape, strides, want))


# ------------------------------------------------------------------ description

def _arg_label(index: int, spec: BufferSpec) -> str:
    return f"argument {index} ('%{spec.name}')"


def describe(x: Any) -> str:
    """A short human description of what the user passed."""
    if isinstance(x, np.ndarray):
        return f"numpy {x.dtype} array of shape {tuple(x.shape)}"
    if _is_torch(x):
        return f"torch {str(x.dtype).removeprefix('torch.')} tensor of shape {tuple(x.shape)} on {x.device}"
    cai = _safe_cai(x)
    if cai is not None:
        return (f"{type(x).__module__.split('.')[0]} {cai.get('typestr')} device array "
                f"of shape {tuple(cai.get('shape', ()))}")
    return f"{type(x).__name__}"


def _safe_cai(x: Any) -> dict | None:
    try:
        return getattr(x, "__cuda_array_interface__", None)
    except Exception:
        return None


def _mismatch(index: int, spec: BufferSpec, given: str, hint: str = "") -> ArgumentError:
    layout = "" if spec.strides is None else f" with strides {spec.strides}"
    return ArgumentError(f"{_arg_label(index, spec)}: expected {tensor_type_str(spec.user_shape, spec.dtype)}"
                         f"{layout}, got {given}{hint}")


def _layout_error(index: int, spec: BufferSpec, what: str) -> ArgumentError:
    return ArgumentError(f"{_arg_label(index, spec)}: compiled for the layout {spec.layout_str()}, got {what}")


def _check_strides(index: int, spec: BufferSpec, got: Sequence[int | None], given: str) -> None:
    """The array's element strides (None: not a whole number of elements) are the declared ones
    (a dim of extent 1 may have any stride; an empty array matches any)."""
    shape = spec.user_shape
    if math.prod(shape) == 0:
        return
    if all(n == 1 or g == w for n, g, w in zip(shape, got, spec.strides)):
        return
    shown = tuple("?" if g is None else g for g in got)
    raise _layout_error(index, spec, f"{given} with strides {shown} (compile the fusion for this layout, or "
                                     "pass an array laid out as declared)")


def _storage_ptr(ptr: int, index: int, spec: BufferSpec) -> int:
    """The storage buffer's address for a strided input whose element 0 is at `ptr`: `offset`
    elements before it, 16-byte aligned (the kernel's vector loads assume it)."""
    base = ptr - spec.offset * DTYPES[spec.dtype]
    if base % 16:
        size = DTYPES[spec.dtype]
        fit = f"; declare offset {(ptr % 16) // size}" if ptr % size == 0 else ""
        raise _layout_error(index, spec, f"a buffer at {base:#x} ({spec.offset} elements before the data pointer "
                                         f"{ptr:#x}), not 16-byte aligned{fit}")
    return base


def as_layout(x: np.ndarray, strides: Sequence[int], offset: int = 0) -> np.ndarray:
    """x's values as a numpy view with element `strides` at `offset` of a storage of its own, as
    a strided input declares them (an expanded dim, of stride 0, takes the dim's first slice).
    For tests and tools that make strided inputs."""
    first = tuple(slice(0, 1) if s == 0 else slice(None) for s in strides)
    x = np.broadcast_to(np.asarray(x)[first], x.shape)
    span = offset + sum((n - 1) * s for n, s in zip(x.shape, strides)) + 1 if x.size else offset
    storage = np.zeros(max(span, 1), x.dtype)
    view = as_strided(storage[offset:], x.shape, [s * x.itemsize for s in strides])
    view[...] = x
    return view


def as_strided(base: np.ndarray, shape: Sequence[int], strides: Sequence[int]) -> np.ndarray:
    """numpy's as_strided (`strides` in bytes), also of ml_dtypes' types whose array interface
    numpy cannot read back (float8_e5m2's "<f1"): through an unsigned integer view of their
    width, viewed back (a writable view of `base` all the same)."""
    dt = base.dtype
    if dt.kind == "V" or dt.str[1:] == "f1":
        raw = base.view(f"u{dt.itemsize}")
        return np.lib.stride_tricks.as_strided(raw, shape, strides).view(dt)
    return np.lib.stride_tricks.as_strided(base, shape, strides)


def _host_storage(x: np.ndarray, spec: BufferSpec) -> np.ndarray:
    """The 1-D storage buffer of a strided host input whose strides match its declared ones: its
    elements placed at offset + sum(i * strides) (elements it does not reach are zeros)."""
    storage = np.zeros(spec.shape, dtype=x.dtype)
    if x.size:
        view = as_strided(storage[spec.offset:], spec.user_shape, [s * x.itemsize for s in spec.strides])
        view[...] = x  # (overlapping elements, of stride-0 dims, are written the same value)
    return storage


def check_count(args: Sequence[Any], specs: Sequence[BufferSpec]) -> None:
    if len(args) != len(specs):
        names = ", ".join(s.name for s in specs)
        raise ArgumentError(f"expected {len(specs)} arguments ({names}), got {len(args)}")


# ------------------------------------------------------------------- conversion

# What convert_arg returns, as a plain tuple for speed:
#   (ptr, host, kind, ref)
#   ptr:  device pointer (int) or None when ``host`` must be copied to the device
#   host: the C-contiguous numpy array to upload, or None
#   kind: "numpy" | "torch" | "torch_cpu" | "cupy" | "device": the family outputs follow
#   ref:  the object that decides output placement/kind (and keeps data alive)
Converted = tuple


_torch_tensor_type: Any = None


def _is_torch(x: Any) -> bool:
    """A torch tensor (without importing torch: only if the caller already has)."""
    global _torch_tensor_type
    if _torch_tensor_type is None:
        torch = sys.modules.get("torch")
        if torch is None:
            return False
        _torch_tensor_type = torch.Tensor
    return isinstance(x, _torch_tensor_type)


def _from_numpy(x: np.ndarray, index: int, spec: BufferSpec, kind: str = "numpy", ref: Any = None) -> Converted:
    want = _NP.get(spec.dtype)
    if want is None or x.dtype != want or x.shape != spec.user_shape:
        if spec.dtype == "bf16" and want is None:
            raise _mismatch(index, spec, describe(x), " (bf16 host arrays need 'ml_dtypes')")
        raise _mismatch(index, spec, describe(x))
    if spec.strides is not None:
        elem = [b // x.itemsize if b % x.itemsize == 0 else None for b in x.strides]
        _check_strides(index, spec, elem, describe(x))
        return (None, _host_storage(x, spec), kind, x if ref is None else ref)
    if not x.flags.c_contiguous:
        raise _mismatch(index, spec, "non-contiguous " + describe(x),
                        " (pass a C-contiguous array, e.g. np.ascontiguousarray(x))")
    return (None, x, kind, x if ref is None else ref)


def _from_torch(x: Any, index: int, spec: BufferSpec) -> Converted:
    if x.dtype is not torch_dtype(spec.dtype) or x.shape != spec.user_shape:
        raise _mismatch(index, spec, describe(x))
    if spec.strides is not None:
        _check_strides(index, spec, list(x.stride()), describe(x))
    elif not x.is_contiguous():
        raise _mismatch(index, spec, "non-contiguous " + describe(x), " (call .contiguous() first)")
    if not x.is_cuda:
        if x.device.type != "cpu":
            raise _mismatch(index, spec, describe(x), " (only CPU and CUDA tensors are supported)")
        t = x.detach()
        if spec.dtype in _BITS_VIEW:  # numpy has no bf16 or FP8: reinterpret the bits via ml_dtypes
            import torch
            host = t.view(getattr(torch, _BITS_VIEW[spec.dtype])).numpy().view(numpy_dtype(spec.dtype))
        else:
            host = t.numpy()
        if spec.strides is not None:
            host = _host_storage(host, spec)
        return (None, host, "torch_cpu", x)
    ordinal = x.get_device()  # (the index without building a torch.device)
    bound = _bind_device(ordinal)
    if ordinal != bound:
        raise _mismatch(index, spec, describe(x), f" (fuser runs on cuda:{bound} in this process: one GPU a "
                                                  f"process, chosen by the first tensor or FUSER_DEVICE)")
    if spec.strides is not None:
        if x.storage_offset() < spec.offset:
            raise _layout_error(index, spec, f"storage offset {x.storage_offset()}, less than the declared offset "
                                             f"{spec.offset}: the buffer would start before the tensor's storage")
        return (_storage_ptr(x.data_ptr(), index, spec), None, "torch", x)
    return (x.data_ptr(), None, "torch", x)


def _from_cai(x: Any, cai: dict, index: int, spec: BufferSpec) -> Converted:
    shape = tuple(int(d) for d in cai.get("shape", ()))
    dtype = _CAI_DTYPE.get(cai.get("typestr"))
    given = describe(x)
    if dtype != spec.dtype or shape != spec.user_shape:
        raise _mismatch(index, spec, given)
    if cai.get("mask") is not None:
        raise _mismatch(index, spec, "masked " + given)
    strides = cai.get("strides")
    ptr = int(cai["data"][0])
    if spec.strides is not None:
        size = DTYPES[dtype]
        elem = _c_strides(shape, 1) if strides is None else [b // size if b % size == 0 else None for b in strides]
        _check_strides(index, spec, elem, given)
        ptr = _storage_ptr(ptr, index, spec)
    elif not _is_c_contiguous(shape, strides, DTYPES[dtype]):
        raise _mismatch(index, spec, "non-contiguous " + given, f" (strides {tuple(strides)})")
    stream = cai.get("stream")
    kind = "cupy" if type(x).__module__.startswith("cupy") else "device"
    # 1 = legacy default stream and 2 = per-thread default stream both order with
    # the legacy stream; any other producer stream is synchronized by the executor.
    foreign = stream if isinstance(stream, int) and stream not in (0, 1, 2) else None
    return (ptr, None, kind, (x, foreign))


# ---- DLPack (unversioned capsule "dltensor")

class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int32),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_capsule_ptr = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_ptr.restype = ctypes.c_void_p
_capsule_ptr.argtypes = [ctypes.py_object, ctypes.c_char_p]


def _from_dlpack(x: Any, index: int, spec: BufferSpec) -> Converted:
    dev_type, dev_id = x.__dlpack_device__()
    if dev_type == _DL_CPU:
        try:
            host = np.from_dlpack(x)
        except Exception as e:
            raise _mismatch(index, spec, f"host DLPack {type(x).__name__} that numpy cannot import ({e})")
        return _from_numpy(host, index, spec, kind="numpy")
    if dev_type not in (_DL_CUDA, _DL_CUDA_MANAGED):
        raise _mismatch(index, spec, f"{type(x).__name__} on DLPack device ({dev_type}, {dev_id})",
                        " (fuser runs on a CUDA device)")
    bound = _bind_device(dev_id)
    if dev_id != bound:
        raise _mismatch(index, spec, f"{type(x).__name__} on DLPack device ({dev_type}, {dev_id})",
                        f" (fuser runs on CUDA device {bound} in this process)")
    try:
        capsule = x.__dlpack__(stream=1)  # ask the producer to order with the legacy stream
    except TypeError:
        capsule = x.__dlpack__()
    # Not consuming the capsule (no rename) leaves its destructor to release the tensor.
    t = _DLTensor.from_address(_capsule_ptr(capsule, b"dltensor"))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    dtype = _DL_DTYPE.get((t.dtype.code, t.dtype.bits)) if t.dtype.lanes == 1 else None
    given = f"{type(x).__name__} DLPack tensor (code {t.dtype.code}, {t.dtype.bits} bits) of shape {shape}"
    if dtype != spec.dtype or shape != spec.user_shape:
        raise _mismatch(index, spec, given)
    ptr = (t.data or 0) + t.byte_offset
    if spec.strides is not None:  # DLPack strides count elements, not bytes
        elem = [t.strides[i] for i in range(t.ndim)] if t.strides else _c_strides(shape, 1)
        _check_strides(index, spec, elem, given)
        ptr = _storage_ptr(ptr, index, spec)
    elif t.strides:
        elem = [t.strides[i] * DTYPES[dtype] for i in range(t.ndim)]
        if not _is_c_contiguous(shape, elem, DTYPES[dtype]):
            raise _mismatch(index, spec, "non-contiguous " + given)
    kind = "cupy" if type(x).__module__.startswith("cupy") else "device"
    return (ptr, None, kind, (x, capsule))


def convert_arg(x: Any, index: int, spec: BufferSpec) -> Converted:
    """Validate one argument against its spec and say how to pass it to a kernel."""
    if _is_torch(x):  # first: the common case of the per-call hot path
        return _from_torch(x, index, spec)
    if isinstance(x, np.ndarray):
        return _from_numpy(x, index, spec)
    if isinstance(x, np.generic):  # a numpy scalar is a 0-d array
        return _from_numpy(np.asarray(x), index, spec)
    if type(x) is DeviceArray:
        if x.dtype != spec.dtype or x.shape != spec.user_shape:
            raise _mismatch(index, spec, describe(x))
        if spec.strides is not None:
            _check_strides(index, spec, list(x.strides), describe(x))
            return (_storage_ptr(x.ptr, index, spec), None, "device", x)
        if x.perm is not None and not _is_c_contiguous(x.shape, x.strides, 1):
            raise _mismatch(index, spec, "non-contiguous " + describe(x))
        return (x.ptr, None, "device", x)
    cai = _safe_cai(x)
    if cai is not None:
        return _from_cai(x, cai, index, spec)
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        return _from_dlpack(x, index, spec)
    raise _mismatch(index, spec, describe(x))


def foreign_stream(conv: Converted) -> int | None:
    """A producer stream (CAI) the launch stream must wait for, if any."""
    ref = conv[3]
    if conv[2] in ("cupy", "device") and isinstance(ref, tuple) and isinstance(ref[1], int):
        return ref[1]
    return None


# ---------------------------------------------------------------------- outputs

class DeviceArray:
    """A device tensor owned by fuser: ``__cuda_array_interface__`` and ``.numpy()``."""

    def __init__(self, shape: tuple[int, ...], dtype: str, stream: int = 0):
        from .driver import DeviceBuffer
        self.shape = tuple(shape)
        self.dtype = dtype
        # stream-ordered: freeing a dropped output does not stall the device
        self.buffer = DeviceBuffer(math.prod(self.shape) * DTYPES[dtype], stream=stream)
        self.ptr = self.buffer.ptr
        self.stream = stream  # where the producing kernels were queued
        self.perm: tuple[int, ...] | None = None  # a permuted view: dim i is dim perm[i] of the buffer's array

    @property
    def strides(self) -> tuple[int, ...]:
        """Element strides (row-major unless a permuted view)."""
        if self.perm is None:
            return tuple(_c_strides(self.shape, 1))
        dense = _c_strides([self.shape[self.perm.index(d)] for d in range(len(self.perm))], 1)
        return tuple(dense[p] for p in self.perm)

    def permute(self, perm: Sequence[int]) -> "DeviceArray":
        """A view of the same buffer with dims permuted (as torch's `permute`: dim i of the view
        is dim perm[i] of this array)."""
        view = object.__new__(DeviceArray)
        view.__dict__.update(self.__dict__)
        base = self.perm if self.perm is not None else tuple(range(len(self.shape)))
        view.perm = tuple(base[p] for p in perm)
        view.shape = tuple(self.shape[p] for p in perm)
        return view

    @property
    def __cuda_array_interface__(self) -> dict:
        strides = None if self.perm is None else tuple(s * DTYPES[self.dtype] for s in self.strides)
        return {"shape": self.shape, "typestr": _CAI_TYPESTR[self.dtype], "strides": strides,
                "data": (self.ptr, False), "version": 3,
                "stream": self.stream if self.stream not in (0, None) else 1}

    def numpy(self) -> np.ndarray:
        from . import driver
        perm = self.perm
        dense = self.shape if perm is None else tuple(self.shape[perm.index(d)] for d in range(len(perm)))
        out = np.empty(dense, dtype=numpy_dtype(self.dtype))
        if self.stream:  # the synchronous copy below only orders with the legacy stream
            driver.check(driver._cu.cuStreamSynchronize(driver.stream_handle(self.stream)),
                         "cuStreamSynchronize")
        out = self.buffer.copy_to_host(out)
        return out if perm is None else np.transpose(out, perm)

    def __repr__(self) -> str:
        return f"DeviceArray({tensor_type_str(self.shape, self.dtype)}, ptr=0x{self.ptr:x})"


def allocate_outputs(kind: str, ref: Any, specs: Sequence[BufferSpec], stream: int = 0) -> list:
    """Allocate output storage of the given kind.

    Returns ``[(ptr, obj), ...]``: ``obj`` is what the user gets back, except for the
    host kinds, where it is a DeviceArray to copy back with :func:`finish_outputs`.
    """
    out = []
    if kind == "torch":
        for s in specs:  # new_empty: same device as ref, and cheaper than torch.empty
            t = ref.new_empty(s.shape, dtype=torch_dtype(s.dtype))
            out.append((t.data_ptr(), t))
        return out
    if kind == "cupy" and all(s.dtype not in _BITS_VIEW for s in specs):
        import cupy
        for s in specs:
            a = cupy.empty(s.shape, dtype=numpy_dtype(s.dtype))
            out.append((int(a.data.ptr), a))
        return out
    for s in specs:
        a = DeviceArray(s.shape, s.dtype, stream)
        out.append((a.ptr, a))
    return out


def finish_outputs(kind: str, outs: list, specs: Sequence[BufferSpec] | None = None) -> list:
    """Turn allocated outputs into what the user gets (device->host copies for host kinds); an
    output with a stride order (`specs`) is the permuted view of its dense buffer, which holds
    its dims in that order: its strides are the order's."""
    objs = [o for _, o in outs]
    if specs is not None:
        objs = [o if s.order is None else _permuted(o, _inverse(s.order)) for o, s in zip(objs, specs)]
    if kind == "numpy":
        return [a.numpy() for a in objs]
    if kind == "torch_cpu":
        import torch
        res = []
        for a in objs:
            h = a.numpy()
            res.append(torch.from_numpy(h.view(_BITS_VIEW[a.dtype])).view(torch_dtype(a.dtype))
                       if a.dtype in _BITS_VIEW else torch.from_numpy(h))
        return res
    return objs


def _inverse(order: Sequence[int]) -> list[int]:
    return [list(order).index(d) for d in range(len(order))]


def _permuted(a: Any, perm: list[int]) -> Any:
    if perm == list(range(len(perm))):
        return a
    if isinstance(a, np.ndarray):
        return np.transpose(a, perm)
    if type(a) is DeviceArray or _is_torch(a):
        return a.permute(perm)
    return a.transpose(perm)  # cupy


def _bind_device(ordinal: int) -> int:
    """driver.bind_device, imported on use (the reference path needs no CUDA bindings)."""
    from .driver import bind_device

    return bind_device(ordinal)
