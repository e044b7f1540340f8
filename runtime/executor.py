"""Run a :class:`~fuser.runtime.plan.Program`: validate arguments, allocate outputs and
workspaces, and queue its kernel launches on a stream.

Everything that does not depend on the call's arguments is computed once: the
module is loaded once per process per PTX, kernels are resolved once, and each
launch keeps a preallocated kernel-params block whose pointer slots are the only
thing a call writes. The GPU is first touched on the first call, after the
arguments have been validated.

A call again with CUDA torch tensors of the signature seen before (the PyTorch backend's
every call) takes `Executor._torch_call`: per launch a launcher with grid, block and params
block bound (`driver.Kernel.launcher`), the tensors checked against the seen dtypes and shapes
(`FUSER_CHECK_ARGS=0`: not checked, for callers that guarantee them), outputs by `new_empty`.
"""

from __future__ import annotations

import ctypes
import hashlib
import math
import operator
import os
import threading
from typing import Any

from . import cubins, driver
from .arrays import _is_torch, torch_dtype, allocate_outputs, check_count, convert_arg, finish_outputs, foreign_stream
from .plan import Program

__all__ = ["Executor", "load_module"]

_modules: dict[str, driver.Module] = {}
_kernels: dict[tuple[str, str], driver.Kernel] = {}
_smem_optin: dict[tuple[str, str], int] = {}
_load_lock = threading.Lock()


def _ptx_key(ptx: str) -> str:
    return hashlib.sha256(ptx.encode()).hexdigest()


# modules this process loaded from a cubin made ahead (runtime/cubins.py) and from PTX
load_counts = {"cubin": 0, "ptx": 0}


def load_module(ptx: str) -> driver.Module:
    """The loaded module for this PTX text, loading it once per process: from its cubin when the
    cache has one (made by ptxas ahead of time), else from the PTX (the driver compiles it)."""
    key = _ptx_key(ptx)
    m = _modules.get(key)
    if m is None:
        with _load_lock:
            m = _modules.get(key)
            if m is None:
                m = _modules[key] = _load_new_module(ptx)
    return m


def _load_new_module(ptx: str) -> driver.Module:
    cubin = cubins.cached(ptx)
    if cubin is not None:
        try:
            m = driver.Module.load_cubin(cubin, ptx)
            load_counts["cubin"] += 1
            return m
        except driver.CudaError:
            pass  # made for another GPU: the driver compiles the PTX for this one
    m = driver.Module.load_ptx(ptx)
    load_counts["ptx"] += 1
    return m


def _kernel(ptx_key: str, module: driver.Module, name: str, smem: int) -> driver.Kernel:
    k = _kernels.get((ptx_key, name))
    if k is None:
        k = _kernels[(ptx_key, name)] = module.function(name)
    # Dynamic smem above 48 KB needs an opt-in; raise it, never lower it (shared kernels).
    if smem > 48 * 1024 and smem > _smem_optin.get((ptx_key, name), 0):
        limit = driver.device().max_smem_per_block_optin
        if smem > limit:
            raise driver.CudaError(f"kernel '{name}' asks for {smem} bytes of dynamic shared memory; "
                                   f"this GPU allows at most {limit} per block")
        k.set_max_dynamic_smem(smem)
        _smem_optin[(ptx_key, name)] = smem
    return k


def _check_coresident(s: "_Step", name: str) -> None:
    """A grid whose CTAs wait on one another hangs unless all of them are resident at once."""
    ctas = math.prod(s.grid)
    per_sm = s.kernel.max_active_per_sm(math.prod(s.block), s.smem)
    sms = driver.device().sm_count
    if ctas > sms * per_sm:
        raise driver.CudaError(
            f"kernel '{name}': its {ctas} CTAs wait on one another (serial split-K on a persistent grid), so all "
            f"must be resident at once, but this GPU holds {sms * per_sm} ({sms} SMs x {per_sm}); compile with "
            f"sms={sms * per_sm} or less, or with matmul_persistent=0")


def _stream_int(stream: Any) -> int:
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream / cupy Stream
        v = getattr(stream, attr, None)
        if v is not None:
            return int(v)
    return int(stream)  # CUstream


def _torch_raw_stream(index: int) -> int:
    """torch's current stream on GPU `index`, as a raw handle (0 = legacy default); replaced by
    torch's own function on first use."""
    global _torch_raw_stream
    import torch
    raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
    _torch_raw_stream = raw if raw is not None else (lambda idx: torch.cuda.current_stream(idx).cuda_stream)
    return _torch_raw_stream(index)


def _torch_current_stream(tensor: Any) -> int:
    """torch's current stream on the tensor's device, as a raw handle (0 = legacy default)."""
    return _torch_raw_stream(tensor.device.index or 0)


_MISS = object()  # a cached call's arguments did not fit: take the general path


class _Step:
    __slots__ = ("kernel", "grid", "block", "smem", "cluster", "dependent", "params", "fill", "tfill")


def check_args_enabled() -> bool:
    """False when FUSER_CHECK_ARGS is 0 (also "false", "off", "no"): a cached call of CUDA torch
    tensors then skips the dtype, shape, device and layout checks of its arguments (read when an
    Executor is made)."""
    return os.environ.get("FUSER_CHECK_ARGS", "1").strip().lower() not in ("0", "false", "off", "no")


class Executor:
    """Callable runner of a Program: ``outputs = Executor(program)(*inputs)``."""

    def __init__(self, program: Program):
        self.program = program
        self.inputs = list(program.inputs)
        self.outputs = list(program.outputs)
        n_in, n_out = len(self.inputs), len(self.outputs)
        # Call-time pointers are laid out flat as [inputs, outputs, workspaces].
        base = {"in": 0, "out": n_in, "ws": n_in + n_out}
        self._plan = []
        self._tmaps = list(program.tensor_maps)
        # tensor map i reads the flat pointer slot of its source buffer
        self._tmap_src = [base[t.source[0]] + int(t.source[1]) for t in self._tmaps]
        self._tmap_cache: dict[tuple[int, int], bytes] = {}  # (map, pointer) -> encoded descriptor
        for step in program.launches:
            fill, consts, tfill = [], [], []
            for slot, ref in enumerate(step.args):
                if ref[0] == "const":
                    consts.append((slot, driver.pack_arg((ref[2], ref[1]))))
                elif ref[0] in base:
                    fill.append((slot, base[ref[0]] + int(ref[1])))
                elif ref[0] == "tmap":
                    tfill.append((slot, int(ref[1])))
                else:
                    raise ValueError(f"launch of {step.kernel}: bad argument reference {ref!r}")
            self._plan.append((step, tuple(fill), tuple(consts), tuple(tfill)))
        self._zero_ws = tuple(i for i, w in enumerate(program.workspaces) if w.zero_init)
        self._kept_zero_ws = tuple(i for i, w in enumerate(program.workspaces) if w.kept_zero)
        self._zero_out = tuple(program.zero_outputs)
        # In-place outputs: per output, the input whose buffer its kernels write (None: its own).
        self._alias = tuple(o.alias for o in self.outputs)
        self._own_outputs = [o for o in self.outputs if o.alias is None]
        self._steps: list[_Step] | None = None   # built on the first call (needs the GPU)
        self._ws_pool: dict[int, list[driver.DeviceBuffer]] = {}
        self._lock = threading.Lock()
        self._torch_want: list[tuple[Any, tuple]] | None = None  # per input (torch dtype, shape), once seen
        self._torch_ordinal = -1
        self._check_args = check_args_enabled()
        # Declared layouts (strided inputs, outputs in a stride order) take the general path,
        # which checks them; the cached torch call assumes dense row-major buffers.
        self._layouts = not all(b.plain for b in self.inputs + self.outputs)
        # The cached torch call's layout, made on its first use (_torch_layout): the outputs'
        # (shape, torch dtype) and, per launch, a launcher with its grid, block, shared memory
        # and params block bound, and the (slot, flat pointer index) pairs it writes.
        self._torch_outs: tuple | None = None
        self._launchers: tuple | None = None

    # ---------------------------------------------------------------- GPU setup
    def _load(self) -> list[_Step]:
        driver.require_gpu()
        ptx = self.program.ptx
        key = _ptx_key(ptx)
        module = load_module(ptx) if self._plan else None  # (a fusion with no kernel has no PTX)
        steps = []
        for step, fill, consts, tfill in self._plan:
            s = _Step()
            s.kernel = _kernel(key, module, step.kernel, step.smem)
            s.grid, s.block, s.smem = tuple(step.grid), tuple(step.block), int(step.smem)
            s.cluster = None if step.cluster is None else tuple(step.cluster)
            s.dependent = bool(step.dependent)
            s.params = driver.ParamBlock(len(step.args), {slot: 128 for slot, _ in tfill})
            for slot, value in consts:
                s.params.values[slot] = value
            s.fill = fill
            s.tfill = tfill
            if step.coresident:
                _check_coresident(s, step.kernel)
            steps.append(s)
        self._steps = steps
        return steps

    def _tensor_map(self, i: int, ptr: int) -> bytes:
        """The encoded CUtensorMap of map i over the buffer at `ptr` (cached per pointer)."""
        key = (i, ptr)
        tm = self._tmap_cache.get(key)
        if tm is None:
            t = self._tmaps[i]
            if ptr % 16:
                raise driver.CudaError(f"tensor map {i}: buffer address {ptr:#x} is not 16-byte aligned (TMA needs it)")
            if len(self._tmap_cache) > 64:
                self._tmap_cache.clear()
            tm = self._tmap_cache[key] = driver.encode_tensor_map(ptr, t.shape, t.dtype, t.box, t.swizzle)
        return tm

    def _workspaces(self, stream: int) -> list[driver.DeviceBuffer]:
        # One set per stream: launches on one stream are ordered, so reuse is safe there.
        ws = self._ws_pool.get(stream)
        if ws is None:
            ws = [driver.DeviceBuffer(w.nbytes) for w in self.program.workspaces]
            # Kept-zero workspaces (e.g. split-K tile semaphores) are zeroed here, once: their
            # kernels leave them zero, so later calls skip the memset. Queued on `stream`, it
            # precedes this call's launches, and the set never serves another stream.
            for i in self._kept_zero_ws:
                ws[i].memset_zero(stream)
            self._ws_pool[stream] = ws
        return ws

    # --------------------------------------------------------------------- call
    def _torch_pointers(self, args: tuple) -> list[int] | None:
        """The data pointers of `args` when every one is a contiguous CUDA torch tensor of its
        input's dtype and shape on the GPU fuser is bound to (every call from the PyTorch
        backend after the first), else None: the call then takes the general checks, which say
        what is wrong. (They cost ~10 us per argument; a GPT-2 training step passes ~2700.)"""
        want = self._torch_want
        if want is None or len(args) != len(want):
            return None
        ordinal = self._torch_ordinal
        ptrs = []
        try:
            for x, (dtype, shape) in zip(args, want):
                if x.dtype is not dtype or x.shape != shape or not x.is_cuda or x.get_device() != ordinal \
                        or not x.is_contiguous():
                    return None
                ptrs.append(x.data_ptr())
        except AttributeError:  # not a torch tensor
            return None
        return ptrs

    def _torch_layout(self) -> None:
        """What a cached torch call needs, computed once: output shapes and dtypes, and per
        step a launcher (driver.Kernel.launcher: everything but the stream bound), its params
        array, a getter of every slot's value from the call's pointers and the constants after
        them (one slice assignment per launch: a ctypes store per slot cost ~0.1 us, and a
        GPT-2 step fills ~3000), and the views its tensor maps are copied into."""
        self._torch_outs = tuple((tuple(o.shape), torch_dtype(o.dtype), o.alias) for o in self.outputs)
        n_ptrs = len(self.inputs) + len(self.outputs) + len(self.program.workspaces)
        consts: list[int] = [0]  # (index 0: the value of slots the call does not read, tensor-map slots)
        launchers = []
        for st, (step, fill, step_consts, tfill) in zip(self._steps, self._plan):
            index = [n_ptrs] * len(step.args)
            for slot, j in fill:
                index[slot] = j
            for slot, value in step_consts:
                index[slot] = n_ptrs + len(consts)
                consts.append(value)
            get = (lambda v, i=index[0]: (v[i],)) if len(index) == 1 else operator.itemgetter(*index) if index else None
            launchers.append((st.kernel.launcher(st.grid, st.block, st.smem, st.params.address, st.cluster, st.dependent),
                              st.params.values, get, tuple((st.params.wide_view(slot), i) for slot, i in tfill)))
        self._torch_consts = consts
        self._launchers = tuple(launchers)

    def _torch_call(self, args: tuple) -> Any:
        """A cached call of CUDA torch tensors: the inputs checked against the signature seen
        before (unless FUSER_CHECK_ARGS=0), outputs by `new_empty`, the launches with their
        layouts precomputed. `_MISS` when the arguments do not fit: the general path then
        checks them and says what is wrong."""
        want = self._torch_want
        if len(args) != len(want):
            return _MISS
        ptrs = []
        try:
            if self._check_args:
                ordinal = self._torch_ordinal
                for x, (dtype, shape) in zip(args, want):
                    # get_device() is -1 for a CPU tensor, so this also says it is on the GPU
                    if x.dtype is not dtype or x.shape != shape or x.get_device() != ordinal or not x.is_contiguous():
                        return _MISS
                    ptrs.append(x.data_ptr())
            else:
                for x in args:
                    ptrs.append(x.data_ptr())
        except AttributeError:  # not a torch tensor
            return _MISS
        return self._torch_launch(args, ptrs)

    @property
    def torch_ready(self) -> bool:
        """A first call through __call__ has set up the cached call of torch tensors (and the
        program takes them: no declared layouts), so `torch_call_unchecked` may be used."""
        return self._torch_want is not None and self._steps is not None and not self._layouts

    def torch_call_unchecked(self, args: tuple) -> Any:
        """The cached torch call without its argument checks (only when `torch_ready`), for a
        caller that guarantees them: `args` are dense CUDA torch tensors of the inputs' dtypes
        and shapes on this executor's GPU. The PyTorch backend's regions are such callers:
        Dynamo guards their graph's inputs, whose shapes are static, and each region lays its
        inputs out before the call."""
        return self._torch_launch(args, [x.data_ptr() for x in args])

    def _torch_launch(self, args: tuple, ptrs: list[int]) -> Any:
        if self._launchers is None:
            self._torch_layout()
        ref = args[0]
        # an in-place output is its input, written through the input's pointer
        outs = [ref.new_empty(shape, dtype=dtype) if alias is None else args[alias]
                for shape, dtype, alias in self._torch_outs]
        for t, (_, _, alias) in zip(outs, self._torch_outs):
            ptrs.append(t.data_ptr() if alias is None else ptrs[alias])
        s = _torch_raw_stream(self._torch_ordinal)
        if self.program.workspaces or self._zero_out:
            hs = driver.stream_handle(s)
            ws = self._workspaces(s) if self.program.workspaces else ()
            for b in ws:
                ptrs.append(b.ptr)
            for i in self._zero_ws:
                ws[i].memset_zero(hs)
            for i in self._zero_out:
                if self.outputs[i].nbytes:
                    driver.check(driver._cu.cuMemsetD8Async(ptrs[len(args) + i], 0, self.outputs[i].nbytes, hs),
                                 "cuMemsetD8Async")
        tmaps = [self._tensor_map(i, ptrs[j]) for i, j in enumerate(self._tmap_src)] if self._tmap_src else None
        if getattr(driver._tls, "ctx", None) is None:
            driver.context()  # this thread's first launch: make the context current
        vec = ptrs + self._torch_consts
        with self._lock:  # the params blocks are shared by concurrent callers
            for go, values, get, tviews in self._launchers:
                if get is not None:
                    values[:] = get(vec)
                for view, i in tviews:
                    view[:] = tmaps[i]
                go(s)
        if len(outs) == 1:
            return outs[0]
        return tuple(outs) if outs else None

    @staticmethod
    def _inplace_result(args: tuple, a: int, fast: bool, convs: list | None, ptr: int, hs: Any) -> Any:
        """What an in-place output returns: input `a`'s own array, updated. A device array was
        written through its pointer; a host one (numpy, a CPU tensor) is copied back from the
        buffer it was uploaded into."""
        if fast or convs[a][0] is not None:
            return args[a]
        host = convs[a][1]
        driver.check(driver._cu.cuStreamSynchronize(hs), "cuStreamSynchronize")
        if host.nbytes:
            driver.context()
            driver.check(driver._cu.cuMemcpyDtoH(host.ctypes.data, ptr, host.nbytes), "cuMemcpyDtoH")
        return convs[a][3]

    def __call__(self, *args: Any, stream: Any = None) -> Any:
        if stream is None and self._torch_want is not None and self._steps is not None and args \
                and _is_torch(args[0]) and not self._layouts:
            out = self._torch_call(args)
            if out is not _MISS:
                return out
        specs = self.inputs
        steps = self._steps
        ptrs = self._torch_pointers(args) if steps is not None and args and _is_torch(args[0]) \
            and not self._layouts else None
        fast = ptrs is not None
        staging, convs = [], None
        if fast:
            kind, ref = "torch", args[0]
        else:
            check_count(args, specs)
            convs = [convert_arg(x, i, s) for i, (x, s) in enumerate(zip(args, specs))]
            for a in self._alias:
                if a is not None and convs[a][0] is None and not convs[a][1].flags.writeable:
                    raise ValueError(f"argument {a}: an in-place output is written back into it, but the array is "
                                     f"read-only")
            kind, ref = (convs[0][2], convs[0][3]) if convs else ("device", None)
            steps = steps or self._load()
            ptrs = []
        if stream is None:
            s = _torch_current_stream(ref) if kind == "torch" else 0
        else:
            s = _stream_int(stream)
        hs = driver.stream_handle(s)

        if not fast:
            for c, spec in zip(convs, specs):
                if c[0] is None:  # host array: upload into a temporary buffer
                    buf = driver.DeviceBuffer(spec.nbytes)
                    buf.copy_from_host(c[1])
                    staging.append(buf)
                    ptrs.append(buf.ptr)
                else:
                    ptrs.append(c[0])
                    f = foreign_stream(c)
                    if f is not None and f != s:
                        driver.wait_on_foreign_stream(f, s)
            if kind == "torch" and self._torch_want is None and specs and not self._layouts:
                self._torch_want = [(torch_dtype(sp.dtype), tuple(sp.shape)) for sp in specs]
                self._torch_ordinal = driver.device_ordinal()
        own = iter(allocate_outputs(kind, ref, self._own_outputs, s))
        outs = [next(own) if a is None else (ptrs[a], None) for a in self._alias]
        ptrs.extend(p for p, _ in outs)
        ws = self._workspaces(s) if self.program.workspaces else ()
        ptrs.extend(b.ptr for b in ws)

        for i in self._zero_ws:
            ws[i].memset_zero(hs)
        for i in self._zero_out:
            if self.outputs[i].nbytes:
                driver.check(driver._cu.cuMemsetD8Async(outs[i][0], 0, self.outputs[i].nbytes, hs),
                             "cuMemsetD8Async")

        tmaps = [self._tensor_map(i, ptrs[j]) for i, j in enumerate(self._tmap_src)]
        with self._lock:  # the params blocks are shared by concurrent callers
            for st in steps:
                vals = st.params.values
                for slot, j in st.fill:
                    vals[slot] = ptrs[j]
                for slot, i in st.tfill:
                    ctypes.memmove(st.params.wide_address(slot), tmaps[i], 128)
                st.kernel.launch_raw(st.grid, st.block, st.smem, hs, st.params.address, st.cluster, st.dependent)

        mine = iter(finish_outputs(kind, [o for o, a in zip(outs, self._alias) if a is None], self._own_outputs))
        results = [next(mine) if a is None else self._inplace_result(args, a, fast, convs, ptrs[a], hs)
                   for a in self._alias]
        if staging:
            # uploads must outlive the kernels reading them
            driver.check(driver._cu.cuStreamSynchronize(hs), "cuStreamSynchronize")
            for b in staging:
                b.free()
        if len(results) == 1:
            return results[0]
        return tuple(results) if results else None
