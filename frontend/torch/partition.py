"""Regions: torch.fx's CapabilityBasedPartitioner groups the nodes the translation table
accepts; each group becomes one fusion (`FusionRegion`), the rest of the graph runs in PyTorch.
"""

from __future__ import annotations

import atexit

import hashlib
import logging
import operator
import os
import time
from dataclasses import dataclass, field, fields
from typing import Any, Callable

import numpy as np
import torch
import torch.fx as fx
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner, Partition
from torch.fx.passes.operator_support import OperatorSupportBase
from xdsl.dialects.builtin import ArrayAttr, FunctionType, StringAttr
from xdsl.ir import Block, SSAValue
from xdsl.transforms.dead_code_elimination import region_dce

import fuser.api as fa
from fuser.runtime import index_check
from fuser.dialects import fusion as F
from fuser.dialects.fusion.layout import output_aliases
from fuser.passes.sink_reshapes import sink_reshapes

from .pad_matmuls import pad_unaligned_matmuls
from .translate import (Unsupported, declare_input, dense_order, input_layout, node_meta, op_name, permute,
                        tensor_meta, translate_node, why_unsupported)

log = logging.getLogger("fuser.torch")

aten = torch.ops.aten

# Ops that move no data by themselves (views in PyTorch): a region made of these alone stays in
# PyTorch, where they cost nothing. (cat, constant_pad_nd and flip copy in PyTorch: not these.)
SHAPE_OPS = {
    aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.unsqueeze.default,
    aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.permute.default, aten.t.default,
    aten.transpose.int, aten.expand.default, aten.clone.default, aten.detach.default, aten.alias.default,
    aten.slice.Tensor, aten.select.int, aten.narrow.default, aten.split.Tensor, aten.split_with_sizes.default,
    operator.getitem,
}


@dataclass
class Stats:
    """What the backend did, for tests and `debug=True` logs."""
    graphs: int = 0
    regions: int = 0
    fused_nodes: int = 0
    torch_nodes: dict[str, int] = field(default_factory=dict)  # op -> count of nodes left to PyTorch
    # region inputs copied at the boundary: a strided input whose strides or storage offset
    # differ from those its region was compiled for (strided inputs are otherwise read in place)
    contiguous_copies: int = 0
    reference_calls: int = 0
    gpu_calls: int = 0
    torch_calls: int = 0  # regions run by their fx graph (mixed devices, executor="torch", compile errors)
    compile_errors: int = 0  # regions fuser could not compile (they run in PyTorch)
    compile_seconds: float = 0.0  # fuser.api.compile time of this backend's regions
    # distinct fusions compiled by this process or its compile workers, and those found already
    # compiled in the disk cache (by another process: a rank of the same job, an earlier run)
    fusions_compiled: int = 0
    fusions_loaded: int = 0
    padded_matmuls: int = 0  # mm / addmm padded to 16-byte rows (pad_matmuls.py)
    causal_masks: int = 0  # attention masks found causal, replaced by is_causal=True (causal_attention.py)
    cudagraph_skips: int = 0  # graphs run without a CUDA graph although cudagraphs=True (backend.py)
    # input mutations (aten.copy_ of a region's result into a graph input that the region reads:
    # batch norm's running statistics, an optimizer's p.add_) made in-place outputs of the region
    inplace_outputs: int = 0
    # where a first step's time goes beyond tracing: partitioning the graphs into regions (the
    # backward's included, when partitioned ahead with its forward), and precompile's wall time
    partition_seconds: float = 0.0
    precompile_seconds: float = 0.0

    def add(self, other: "Stats") -> None:
        """Count `other`'s events here too."""
        for f in fields(self):
            mine, theirs = getattr(self, f.name), getattr(other, f.name)
            if isinstance(mine, dict):
                for k, v in theirs.items():
                    mine[k] = mine.get(k, 0) + v
            else:
                setattr(self, f.name, mine + theirs)


class FuserSupport(OperatorSupportBase):
    """The partitioner's "is supported": the translation table has an entry that accepts it."""

    def __init__(self) -> None:
        self.cache: dict[fx.Node, str | None] = {}

    def is_node_supported(self, submodules: Any, node: fx.Node) -> bool:
        if node.op != "call_function":
            return False
        if node not in self.cache:
            self.cache[node] = why_unsupported(node)
        return self.cache[node] is None


# ------------------------------------------------------------------ tensors <-> numpy


_FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)


def _to_numpy(t: torch.Tensor) -> np.ndarray:
    # A copy: numpy sharing a tensor's storage makes that storage unresizable for good, and
    # FSDP2 frees its gathered parameters by resizing their storage to 0.
    t = t.detach().clone()
    if t.dtype == torch.bfloat16:
        import ml_dtypes
        return t.view(torch.int16).numpy().view(ml_dtypes.bfloat16)
    if t.dtype in _FP8:  # (torch's .numpy() has no FP8: the bits, as ml_dtypes' type)
        import ml_dtypes
        return t.view(torch.uint8).numpy().view(getattr(ml_dtypes, str(t.dtype).removeprefix("torch.")))
    return t.numpy()


def _from_numpy(a: np.ndarray, dtype: torch.dtype) -> torch.Tensor:
    a = np.array(a, order="C")  # a copy: the interpreter may return views of its inputs
    if dtype == torch.bfloat16:
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
    if dtype in _FP8:
        return torch.from_numpy(a.view(np.uint8)).view(dtype)
    return torch.from_numpy(a)


# ------------------------------------------------------------------ one region


# View ops that PyTorch evaluates at a region's boundary when they apply to the region's inputs
# (directly or through one another): they cost nothing there, and the fusion then reads the
# input in the shape it uses (a matmul operand stays a function argument, nothing is reshaped or
# copied inside the kernels). A region output that is such a view is returned as PyTorch's view.
BOUNDARY_OPS = {
    aten.view.default, aten.reshape.default, aten._unsafe_view.default, aten.unsqueeze.default,
    aten.squeeze.default, aten.squeeze.dim, aten.squeeze.dims, aten.permute.default, aten.t.default,
    aten.transpose.int, aten.detach.default, aten.alias.default,
}

# Compiled fusions and reference programs by fusion text: regions with the same ops on the same
# types (every layer of a transformer) share one compiled fusion.
_COMPILED: dict[tuple[str, str, str], Any] = {}
_REFERENCE: dict[str, Any] = {}
_PRECOMPILED: set[tuple[str, str, str]] = set()  # counted in Stats by precompile's workers


class _CompilePool:
    """precompile's worker processes (`python -m fuser.torch.compile_worker`), started on first
    use and kept until this process exits: DDP hands the backend a graph per gradient bucket, and
    a worker's start (an interpreter and fuser's imports) costs about a small fusion's compile."""

    def __init__(self) -> None:
        self.procs: list[Any] = []

    def workers(self, n: int) -> list[Any]:
        import subprocess
        import sys

        self.procs = [p for p in self.procs if p.poll() is None]
        while len(self.procs) < n:
            self.procs.append(subprocess.Popen([sys.executable, "-m", "fuser.torch.compile_worker"],
                                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                               stderr=subprocess.DEVNULL, text=True))
        return self.procs[:n]

    def close(self) -> None:
        for p in self.procs:
            try:
                p.stdin.close()  # end of input: the worker exits
                p.wait(timeout=10)
            except Exception:
                p.kill()
        self.procs = []


_POOL = _CompilePool()
atexit.register(_POOL.close)


def start_compile_workers(n: int) -> None:
    """Start precompile's `n` worker processes now (if not running), so that their start and
    imports overlap the work before the first precompile (Dynamo's tracing, AOTAutograd, the
    partitioning): a GPT-2 step's first batch of fusions waited ~8 s for 10 fresh workers
    (H200 host) whose longest compile took 4 s. Nothing when `n` < 2 or the disk cache, which
    brings their results back, is off."""
    if n >= 2 and os.environ.get("FUSER_CACHE", "1").strip().lower() not in ("0", "false", "off", "no"):
        _POOL.workers(n)


def precompile(regions: list["FusionRegion"], workers: int) -> float:
    """Compile the distinct fusions of `regions` that run on CUDA tensors in `workers` processes
    at once (the disk cache carries the results back), so a graph's first call does not compile
    them one after another. Returns the wall seconds spent; 0 when there is nothing to do, or
    the disk cache is off (FUSER_CACHE=0) so that the workers' results could not come back."""
    if os.environ.get("FUSER_CACHE", "1").strip().lower() in ("0", "false", "off", "no"):
        return 0.0
    todo = {}
    for r in regions:
        if r.device == "cuda" and r.config.get("executor", "auto") == "auto" and r._key() not in _COMPILED \
                and isinstance(r.config.get("pipeline", "default"), str):
            todo.setdefault(r._key(), r)
    if workers < 2 or len(todo) < 2:
        return 0.0
    import json
    import selectors
    from collections import deque

    from fuser.runtime import cache

    start = time.perf_counter()
    first = next(iter(todo.values()))
    stats = first.stats
    job = {"pipeline": first.config.get("pipeline", "default"), "options": first.config.get("options"),
           "cache_dir": str(cache.default_cache().directory)}
    # One fusion per job, largest first (text length stands in for compile time), to whichever
    # worker is free: the slowest compile starts at once and no worker idles while another still
    # has a queue. A fusion another process is compiling (another rank's worker) is put off and
    # taken last, waiting for it then.
    queue = deque(sorted(todo, key=lambda k: -len(k[0])))
    later: deque = deque()
    sel = selectors.DefaultSelector()

    symbol = {k[0]: r.symbol for k, r in todo.items()}
    sent: dict[Any, str] = {}  # worker -> the symbol of the fusion it compiles
    slowest = (0.0, "")

    def give(p: Any) -> bool:
        if not queue and not later:
            return False
        wait = not queue
        text = later.popleft() if wait else queue.popleft()[0]
        sent[p] = symbol[text]
        try:
            p.stdin.write(json.dumps({**job, "texts": [text], "wait": wait}) + "\n")
            p.stdin.flush()
        except OSError:  # the worker died: the fusion compiles on first use
            return False
        return True

    for p in _POOL.workers(min(workers, len(todo))):
        if give(p):
            sel.register(p.stdout, selectors.EVENT_READ, p)
    while sel.get_map():
        for key, _ in sel.select():
            p = key.data
            line = p.stdout.readline() if p.poll() is None else ""
            try:
                summary = json.loads(line)
                stats.fusions_compiled += summary["compiled"]
                stats.fusions_loaded += summary["loaded"]
                failed = summary["failed"]
                later.extend(summary.get("busy", []))
                slowest = max(slowest, (float(summary.get("seconds", 0.0)), sent[p]))
            except (ValueError, KeyError, TypeError):
                failed = [f"the worker died (exit {p.poll()})"]
                p.kill()
            if failed:
                log.debug("precompile worker: %s; those fusions compile on first use", "; ".join(failed))
            if p.poll() is not None or not give(p):
                sel.unregister(p.stdout)
    sel.close()
    log.debug("precompile: %d fusions in %d processes in %.1f s; the longest took %.1f s (@%s)",
              len(todo), len(sent), time.perf_counter() - start, *slowest)
    _PRECOMPILED.update(todo)
    return time.perf_counter() - start


class NoInputs(Unsupported):
    """A region that reads no tensor: it stays in PyTorch."""


def _in_layout(a: torch.Tensor, strides: tuple[int, ...], offset: int) -> bool:
    """Tensor a has the strides a region declared (a size-1 dim's aside) and its storage buffer
    starts `offset` elements before it, 16-byte aligned: the kernels can read it in place."""
    if any(n != 1 and s != w for n, s, w in zip(a.shape, a.stride(), strides)):
        return False
    return a.storage_offset() >= offset and (a.data_ptr() - offset * a.element_size()) % 16 == 0


def _relayout(a: torch.Tensor, strides: tuple[int, ...], offset: int) -> torch.Tensor | None:
    """A copy of a in the layout `strides` at `offset` of a new buffer (one element of each
    expanded dim written: the others are the same memory); None where the layout cannot hold
    a's values (elements it overlaps that differ in a, or NaN, which no comparison confirms)."""
    span = offset + sum((n - 1) * s for n, s in zip(a.shape, strides)) + 1
    view = a.new_empty(span).as_strided(tuple(a.shape), strides, offset)
    one = tuple(slice(0, 1) if s == 0 else slice(None) for s in strides)
    try:
        view[one].copy_(a[one])
    except RuntimeError:
        return None
    return view if torch.equal(view, a) else None


class FusionRegion(torch.nn.Module):
    """One partition as one fuser fusion. Built once (the fusion text); called with the
    region's input tensors, it runs the fusion in the reference interpreter (CPU tensors) or
    as compiled kernels (`fuser.api.compile`, CUDA tensors), and returns tensors with the
    sizes, dtypes and strides torch recorded.

    Layouts: views of the region's inputs (BOUNDARY_OPS) are taken by PyTorch at the boundary;
    an input stored in another dim order is taken as its contiguous permute (declare_input); an
    output torch recorded in another dim order is computed in that order and returned as a
    permuted view. An input that is not dense (a slice with steps or gaps, an expanded view) is
    declared with its strides and read in place; it is copied only when a call's tensor has
    other strides or a storage offset the compiled layout cannot take (`stats.contiguous_copies`).

    The fusion is named after its text (`fuser_<sha1>`), so its kernels are `fuser_<sha1>_k<i>`
    (a profiler tells them from PyTorch's) and equal regions share their compiled kernels."""

    def __init__(self, name: str, graph_module: fx.GraphModule, input_meta: list[torch.Tensor],
                 config: dict[str, Any], stats: Stats, aliases: dict[int, int] | None = None):
        super().__init__()
        self.name = name
        # {region output: region argument} written in place (aten.copy_ of the output into the input)
        self.aliases = dict(aliases or {})
        self.graph_module = graph_module  # the region as PyTorch ops: run when fuser cannot
        self.config = config
        self.stats = stats
        self.fusion = self._build(input_meta)
        self.mlir = self.fusion.mlir()
        self.symbol = self.fusion.func.sym_name.data
        self.index_checks = None  # FUSER_CHECK_INDICES: the region's indexed reads, found on the first call
        devices = {m.device.type for m in [*input_meta, *self.output_meta]}
        self.device = devices.pop() if len(devices) == 1 else "mixed"
        self.compile_error: str | None = None
        self.compile_seconds: float | None = None
        self._prologue: Callable[..., tuple] | None = None  # the boundary as code, made on the first call

    def _build(self, input_meta: list[torch.Tensor]) -> fa.FusionBuilder:
        graph = self.graph_module.graph
        self.placeholders = [n for n in graph.nodes if n.op == "placeholder"]
        if len(self.placeholders) != len(input_meta):
            raise Unsupported(f"region {self.name}: {len(self.placeholders)} inputs, {len(input_meta)} example values")
        for i, (p, m) in enumerate(zip(self.placeholders, input_meta)):
            p.meta.setdefault("val", tensor_meta(m, f"input {i} of {self.name}"))
        # The boundary: placeholders and the views PyTorch takes of them.
        boundary: list[fx.Node] = list(self.placeholders)
        inside = set(boundary)
        for n in graph.nodes:
            if n.op == "call_function" and n.target in BOUNDARY_OPS and n.all_input_nodes \
                    and all(a in inside for a in n.all_input_nodes):
                boundary.append(n)
                inside.add(n)
        (out_node,) = [n for n in graph.nodes if n.op == "output"]
        res = out_node.args[0]
        self.tuple_output = isinstance(res, (tuple, list))
        outputs = list(res) if self.tuple_output else [res]
        # Fusion inputs: boundary values that a fused node reads.
        fused = [n for n in graph.nodes if n.op == "call_function" and n not in inside]
        self.fusion_inputs = [b for b in boundary if any(u in fused for u in b.users)]
        if not self.fusion_inputs:
            # Factories only (position ids from arange): nothing to fuse with, and on CUDA the
            # outputs must come from torch's allocator and stream (CUDA graph pools included).
            raise NoInputs(f"region {self.name} reads no tensor (factories only): PyTorch makes its values")
        fb = fa.FusionBuilder("fuser_region")
        env: dict[fx.Node, Any] = {}
        self.input_orders: list[list[int] | None] = []
        self.input_layouts: list[tuple[tuple[int, ...], int] | None] = []  # a strided input's (strides, offset)
        for i, b in enumerate(self.fusion_inputs):
            m = node_meta(b)
            env[b], order = declare_input(fb, m, f"in{i}")
            self.input_orders.append(order)
            strided = m.numel() > 0 and dense_order(tuple(m.shape), tuple(m.stride())) is None
            self.input_layouts.append(input_layout(m) if strided else None)
        self.op_count = len(inside) - len(self.placeholders)
        for n in fused:
            env[n] = translate_node(n, fb, env)
            self.op_count += 1
        self.rng_seeds = getattr(fb, "rng_seeds", 0)  # seed inputs of random ops, after the tensors
        # Outputs: computed by the fusion in the dim order torch recorded, or boundary views.
        self.output_meta = [node_meta(o) for o in outputs]
        self.output_from: list[tuple[str, Any]] = []  # ("fusion", (index, order)) or ("boundary", node)
        fusion_outs: list[fa.Tensor] = []
        self.fusion_output_dtypes: list[torch.dtype] = []
        # A value returned twice (a node and its alias, e.g. a log-softmax for the loss and saved
        # for the backward) is computed and returned once: both outputs are that one tensor.
        computed: dict[tuple, tuple[str, Any]] = {}
        for o, m in zip(outputs, self.output_meta):
            if o in inside:
                self.output_from.append(("boundary", o))
                continue
            if not isinstance(env.get(o), fa.Tensor):
                raise Unsupported(f"region {self.name}: output %{o.name} is not one tensor")
            order = dense_order(tuple(m.shape), tuple(m.stride()))
            if order == list(range(m.dim())):
                order = None
            key = (env[o].value, None if order is None else tuple(order), m.dtype)
            if key in computed:
                self.output_from.append(computed[key])
                continue
            y = env[o] if order is None else permute(env[o], order)
            computed[key] = ("fusion", (len(fusion_outs), order))
            self.output_from.append(computed[key])
            self.fusion_output_dtypes.append(m.dtype)
            fusion_outs.append(y)
        if not fusion_outs:
            raise Unsupported(f"region {self.name} computes nothing (only views of its inputs)")
        self.boundary = [b for b in boundary if b not in self.placeholders]
        # In-place outputs: region output k written into region argument a (its fusion input).
        into: dict[int, int] = {}  # fusion output -> fusion input
        self.inplace: dict[int, int] = {}  # region output -> region argument, those taken
        for k, a in self.aliases.items():
            kind, what = self.output_from[k]
            src = self.placeholders[a]
            if kind != "fusion" or src not in self.fusion_inputs:
                continue
            i, order = what
            j = self.fusion_inputs.index(src)
            if order is not None or self.input_orders[j] is not None or self.input_layouts[j] is not None \
                    or i in into or j in into.values() or fusion_outs[i].shape != env[src].shape \
                    or fusion_outs[i].dtype != env[src].dtype or sum(1 for f in self.output_from if f == (kind, what)) > 1:
                continue
            into[i] = j
            self.inplace[k] = a
        for i, y in enumerate(fusion_outs):
            fb.output(y, alias=env[self.fusion_inputs[into[i]]] if i in into else None)
        region_dce(fb.func.body)  # translated views that the outputs no longer need (folded permutes)
        self._return_before_reshapes(fb)
        digest = hashlib.sha1(str(fb.module).encode()).hexdigest()[:16]
        fb.func.sym_name = StringAttr(f"fuser_{digest}")
        return fb

    def _return_before_reshapes(self, fb: fa.FusionBuilder) -> None:
        """Sink the fusion's reshapes towards its outputs (fusion-sink-reshapes), then return the
        value under an output's final reshape instead, for PyTorch to view (a reshape of a
        contiguous tensor is free there; in the fusion it would keep the value out of the
        epilogue of the matmul that computes it). A reshape of a value the fusion returns anyway
        (a backward layer's gradient returned as 8x1024x768 and as 8192x768) is not returned
        again: it is a view of that output. Sets `fusion_output_views`, per output as the graph
        asked for them, (the fusion output it is, the shape to view it as or None), and
        `fusion_output_dtypes` per output the fusion returns."""
        block = fb.func.body.block
        sink_reshapes(block)
        ret = block.last_op
        values = list(ret.operands)
        inplace = output_aliases(fb.func)
        sources: list[SSAValue] = []
        for i, v in enumerate(values):
            src = v.owner.input if isinstance(v.owner, F.ReshapeOp) else None
            if src is None or i in inplace or isinstance(src.owner, Block):
                sources.append(v)
            elif src in values and values.index(src) in inplace:
                sources.append(v)  # (a view of an input written in place: left as it was)
            else:
                sources.append(src)
        kept = list(dict.fromkeys(sources))  # (a value returned twice, or with a reshape of it: once)
        self.fusion_output_views = [(kept.index(src), tuple(v.type.get_shape()) if src is not v else None)
                                    for v, src in zip(values, sources)]
        dtypes = self.fusion_output_dtypes
        self.fusion_output_dtypes = [dtypes[sources.index(src)] for src in kept]
        ret.operands = kept
        if fb.func.res_attrs is not None:  # (an in-place output's declaration stays with it)
            fb.func.res_attrs = ArrayAttr([fb.func.res_attrs.data[sources.index(src)] for src in kept])
        fb.func.function_type = FunctionType.from_lists(fb.func.function_type.inputs.data, [v.type for v in kept])
        region_dce(fb.func.body)

    # -- execution

    def _make_prologue(self) -> Callable[..., tuple]:
        """The region's boundary as generated Python (torch.fx's code for a graph of the
        placeholders and the boundary views): args -> (fusion inputs..., boundary outputs...).
        Interpreting the boundary nodes one by one (fx.node.map_arg per node) cost ~20 us of
        each region call (H200 host, GPT-2: 75 region calls a step)."""
        g = fx.Graph()
        env: dict[fx.Node, fx.Node] = {}
        for n in self.placeholders:
            env[n] = g.placeholder(n.name)
        for n in self.boundary:
            env[n] = g.node_copy(n, env.__getitem__)
        returned = [*self.fusion_inputs, *(what for kind, what in self.output_from if kind == "boundary")]
        g.output(tuple(env[n] for n in returned))
        return fx.GraphModule(self.graph_module, g).forward  # (the code itself: no nn.Module call)

    def forward(self, *args: torch.Tensor) -> Any:
        if self._prologue is None:
            self._prologue = self._make_prologue()
        vals = self._prologue(*args)
        n_in = len(self.fusion_inputs)
        ins = []
        for a, order, layout in zip(vals, self.input_orders, self.input_layouts):
            if layout is not None:  # read in place through its strides, or copied into them
                if a.is_cuda and not _in_layout(a, *layout):
                    self.stats.contiguous_copies += 1
                    log.debug("%s: input of shape %s copied into its compiled layout", self.name, tuple(a.shape))
                    a = _relayout(a, *layout)
                    if a is None:  # (overlapping strides other than expanded dims: no copy can hold them)
                        self.stats.torch_calls += 1
                        return self._in_pytorch(args)
                ins.append(a)
                continue
            if order is not None:  # taken in its stored dim order (contiguous as recorded; a copy if not)
                a = a.permute(order)
            if not a.is_contiguous():
                self.stats.contiguous_copies += 1
                log.debug("%s: input of shape %s made contiguous", self.name, tuple(a.shape))
                a = a.contiguous()
            ins.append(a)
        # Each random op's seed, drawn from torch's generator of the region's device: repeatable
        # under torch.manual_seed, new numbers on every call (fuser's stream, not torch's).
        if self.rng_seeds:
            ins += [torch.randint(0, 2 ** 62, (), dtype=torch.int64, device=ins[0].device) for _ in range(self.rng_seeds)]
        if self.index_checks is None:  # (a region without indexed reads reads no variable per call)
            self.index_checks = index_check.index_checks(self.fusion.func)
        if self.index_checks and index_check.enabled():
            index_check.check_indices(self.index_checks, ins, self.symbol)
        # (is_cuda / is_cpu, not a set of each input's torch.device: building those was a quarter
        # of this method's host time)
        on_cuda = all(a.is_cuda for a in ins) if ins else self.device == "cuda"
        on_cpu = not on_cuda and (all(a.is_cpu for a in ins) if ins else self.device == "cpu")
        executor = self.config.get("executor", "auto")
        if executor == "torch" or not (on_cuda or on_cpu):  # (mixed devices, or another kind)
            self.stats.torch_calls += 1
            return self._in_pytorch(args)
        if on_cpu or executor == "reference":
            outs = self._run_reference(ins)
        else:
            compiled = self._compiled()
            if compiled is None:  # fuser could not compile it: the region's PyTorch ops run instead
                self.stats.torch_calls += 1
                return self._in_pytorch(args)
            self.stats.gpu_calls += 1
            ex = compiled.executor
            # After the first call, without the executor's per-tensor checks: the inputs were
            # laid out above, and their dtypes and shapes are the graph's (static, guarded).
            outs = ex.torch_call_unchecked(ins) if ex is not None and ex.torch_ready else compiled(*ins)
            outs = list(outs) if isinstance(outs, (tuple, list)) else [outs]
        results, given = [], set()
        from_boundary = iter(vals[n_in:])
        for k, ((kind, what), m) in enumerate(zip(self.output_from, self.output_meta)):
            if kind == "boundary":
                results.append(next(from_boundary))
                continue
            i, order = what
            i, shape = self.fusion_output_views[i]
            out = outs[i]
            if k in self.inplace:  # written into its input (the kernels did; the reference's copy is copied in)
                dst = args[self.inplace[k]]
                if out is not dst:
                    dst.copy_(out)
                results.append(dst)
                continue
            if i in given:  # the graph returns it again (an alias): a view of the same storage
                out = out.view(out.shape)
            given.add(i)
            if shape is not None:  # returned before its last reshape: a view
                out = out.view(shape)
            # the recorded strides exactly (a size-1 dim's stride included), over the same elements
            results.append(out if order is None else out.as_strided(m.shape, m.stride()))
        return tuple(results) if self.tuple_output else results[0]

    def _in_pytorch(self, args: tuple) -> Any:
        """The region run as its PyTorch ops, its in-place outputs then copied into their inputs."""
        res = self.graph_module(*args)
        if not self.inplace:
            return res
        res = list(res) if self.tuple_output else [res]
        for k, a in self.inplace.items():
            args[a].copy_(res[k])
            res[k] = args[a]
        return tuple(res) if self.tuple_output else res[0]

    def _run_reference(self, ins: list[torch.Tensor]) -> list[torch.Tensor]:
        from fuser.runtime.reference import reference_from_text

        program = _REFERENCE.get(self.mlir)
        if program is None:
            program = _REFERENCE[self.mlir] = reference_from_text(self.mlir)
        self.stats.reference_calls += 1
        device = ins[0].device if ins else torch.device(self.device if self.device != "mixed" else "cpu")
        outs = program(*[_to_numpy(a.cpu()) for a in ins])
        return [_from_numpy(o, dt).to(device) for o, dt in zip(outs, self.fusion_output_dtypes)]

    def _key(self) -> tuple[str, str, str]:
        options = self.config.get("options") or {}
        return self.mlir, str(self.config.get("pipeline", "default")), repr(sorted(options.items()))

    def compiled_if_any(self) -> Any:
        """The CompiledFusion if this region has been compiled (run on CUDA tensors), else None."""
        return _COMPILED.get(self._key())

    def _compiled(self) -> Any:
        """The region's CompiledFusion (shared by equal regions), or None if fuser refused to
        compile it (logged once as a warning, kept in `compile_error`)."""
        if self.compile_error is not None:
            return None
        key = self._key()
        pipeline, options = self.config.get("pipeline", "default"), self.config.get("options")
        compiled = _COMPILED.get(key)
        if compiled is None:
            start = time.perf_counter()
            try:
                compiled = fa.compile(self.mlir, pipeline=pipeline, options=options, stages=False)
            except Exception as e:  # a fuser limit the table did not foresee: fall back, never fail the model
                self.compile_error = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
                self.stats.compile_errors += 1
                log.warning("%s (%s) runs in PyTorch: fuser could not compile it: %s", self.name, self.symbol,
                            self.compile_error)
                return None
            self.compile_seconds = time.perf_counter() - start
            self.stats.compile_seconds += self.compile_seconds
            if key not in _PRECOMPILED:
                if compiled.result.cached:
                    self.stats.fusions_loaded += 1
                else:
                    self.stats.fusions_compiled += 1
            if self.config.get("debug"):
                log.info("%s (@%s): %d kernels compiled in %.2f s", self.name, self.symbol,
                         len(compiled.program.launches), self.compile_seconds)
            _COMPILED[key] = compiled
        return compiled

# ------------------------------------------------------------------ a whole graph


def _strided_view(node: fx.Node) -> bool:
    """Torch records `node`'s value as a view that no row-major or permuted dense tensor is (a
    slice of a wider tensor; a split's results), or as several values."""
    val = node.meta.get("val")
    if not isinstance(val, torch.Tensor):
        return True
    return dense_order(tuple(val.shape), tuple(val.stride())) is None


def keep_escaping_views_outside(p: Partition) -> None:
    """Take out of partition `p` the view ops (SHAPE_OPS) whose value leaves it as a strided
    view, until none is left: fuser writes a region's outputs densely, but the graph after it
    may rely on the recorded strides (GPT-2's q, k and v, split from one projection, went to
    attention as dense tensors, whose output then came back in another layout than the one a
    later view was recorded on: the view failed under CUDA graphs). Outside, PyTorch takes the
    view of the region's output at no cost; inside, a slice read by the region's own kernels
    stays an index computation."""
    changed = True
    while changed:
        changed = False
        for n in list(p.nodes):
            # (only a view no node inside reads: one read inside and out would make a cycle)
            if n.target in SHAPE_OPS and _strided_view(n) and n.users and all(u not in p.nodes for u in n.users):
                p.remove_node(n)
                changed = True


def split_independent(partitions: list[Partition]) -> list[Partition]:
    """Each partition cut into its independent parts: nodes joined by an edge inside it, or
    reading the same value from outside it (matmuls sharing an operand, a bias-gradient sum and
    its weight-gradient matmul, may share a kernel), stay together. The capability partitioner
    puts everything it can into one region, so a backward graph's weight gradients for every
    layer made one fusion of ~160 kernels that took 84 s to compile on one core (the longest
    single compile bounds the first step); as one region per layer's part, the layers' equal
    fusions compile once (regions are named and cached by their text)."""
    out: list[Partition] = []
    for p in partitions:
        nodes = list(p.nodes)
        inside = set(nodes)
        parent = {n: n for n in nodes}

        def find(x: fx.Node) -> fx.Node:
            while parent[x] is not x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        reader: dict[fx.Node, fx.Node] = {}  # outside value -> a node inside that reads it
        for n in nodes:
            for a in n.all_input_nodes:
                other = a if a in inside else reader.setdefault(a, n)
                parent[find(other)] = find(n)
        groups: dict[fx.Node, list[fx.Node]] = {}
        for n in nodes:
            groups.setdefault(find(n), []).append(n)
        if len(groups) == 1:
            out.append(p)
            continue
        out += [Partition(id=len(out) + i, nodes=g) for i, g in enumerate(groups.values())]
    return out


def partition_graph(gm: fx.GraphModule, config: dict[str, Any], stats: Stats, kind: str = "graph") -> fx.GraphModule:
    """Replace every region of supported nodes in `gm` by a FusionRegion; nodes the table does
    not take stay as they are (PyTorch)."""
    if any(isinstance(n.meta.get("val"), torch.Tensor) and not all(isinstance(d, int) for d in n.meta["val"].shape)
           for n in gm.graph.nodes if n.op == "placeholder"):
        # Fusions have static shapes: a graph Dynamo made dynamic (after a second input shape)
        # runs in PyTorch. torch.compile(..., dynamic=False) recompiles per shape instead, and
        # regions whose fusion did not change reuse their kernels.
        log.warning("%s graph has symbolic shapes: it runs in PyTorch; pass dynamic=False to torch.compile "
                    "to have fuser compile each input shape", kind)
    if config.get("pad_matmuls", True):
        stats.padded_matmuls += pad_unaligned_matmuls(gm)
    support = FuserSupport()
    partitioner = CapabilityBasedPartitioner(gm, support, allows_single_node_partition=True)
    proposed = partitioner.propose_partitions()
    for p in proposed:
        keep_escaping_views_outside(p)
    partitions = [p for p in split_independent(proposed)
                  if any(n.op == "call_function" and n.target not in SHAPE_OPS for n in p.nodes)]
    stats.graphs += 1
    fused_nodes = {n for p in partitions for n in p.nodes}
    fallbacks: dict[str, tuple[int, str]] = {}  # op -> (count, the first reason)
    for n in gm.graph.nodes:
        if n.op == "call_function" and n not in fused_nodes:
            name = op_name(n.target)
            why = support.cache.get(n) or "a region of shape ops only (nothing to fuse)"
            stats.torch_nodes[name] = stats.torch_nodes.get(name, 0) + 1
            count, first = fallbacks.get(name, (0, why))
            fallbacks[name] = (count + 1, first)
            if config.get("debug"):
                log.info("%s: %%%s (%s) runs in PyTorch: %s", kind, n.name, name, why)
    gm.fuser_fallbacks = fallbacks
    if not partitions:
        return gm
    fused = partitioner.fuse_partitions(partitions, prefix="fuser_region_")
    for node in list(fused.graph.nodes):
        if node.op != "call_module" or not str(node.target).startswith("fuser_region_"):
            continue
        sub = getattr(fused, node.target)
        input_meta = [a.meta.get("val") for a in node.args]
        mutations = input_mutations(fused.graph, node)
        try:
            region = FusionRegion(f"{kind}_{node.target}", sub, input_meta, config, stats,
                                  {k: a for k, (a, _, _) in mutations.items()})
        except NoInputs as e:
            log.debug("%s: %s", kind, e)
            continue
        except Unsupported as e:  # should not happen: every node passed the same check
            log.warning("%s: region %s stays in PyTorch: %s", kind, node.target, e)
            continue
        setattr(fused, node.target, region)
        for k in region.inplace:  # the region writes the input itself: the copy_ is done
            _, value, copy = mutations[k]
            copy.replace_all_uses_with(value)
            fused.graph.erase_node(copy)
            stats.inplace_outputs += 1
            name = op_name(torch.ops.aten.copy_.default)  # counted as left to PyTorch above: it is not
            stats.torch_nodes[name] -= 1
            if not stats.torch_nodes[name]:
                del stats.torch_nodes[name]
        stats.regions += 1
        stats.fused_nodes += region.op_count
        if config.get("debug"):
            log.info("%s: region %s (@%s), %d ops", kind, node.target, region.symbol, region.op_count)
            if config.get("debug") == "ir":
                log.info("%s", region.mlir)
    fused.recompile()
    fused.fuser_fallbacks = fallbacks
    return fused


def input_mutations(graph: fx.Graph, node: fx.Node) -> dict[int, tuple[int, fx.Node, fx.Node]]:
    """The input mutations AOTAutograd leaves at the end of a graph (keep_inference_input_mutations:
    `aten.copy_(input, value)`) whose value is output k of region call `node` and whose input is
    one of its arguments: {k: (argument index, the value node, the copy_ node)}. Taken only where
    every other reader of the input runs before the region (it would otherwise see the new
    values, which the copy_ at the end kept from it)."""
    order = {n: i for i, n in enumerate(graph.nodes)}
    values = [(0, node)] if not any(u.target is operator.getitem for u in node.users) else \
        [(u.args[1], u) for u in node.users if u.target is operator.getitem]
    out: dict[int, tuple[int, fx.Node, fx.Node]] = {}
    for k, v in values:
        for c in v.users:
            if c.op != "call_function" or c.target is not torch.ops.aten.copy_.default or len(c.args) != 2 \
                    or c.kwargs or c.args[1] is not v:
                continue
            dst = c.args[0]
            if not isinstance(dst, fx.Node) or dst.op != "placeholder" or dst not in node.args:
                continue
            if any(u is not c and u is not node and order[u] > order[node] for u in dst.users):
                continue
            out[k] = (list(node.args).index(dst), v, c)
    return out


def regions(gm: fx.GraphModule) -> list[FusionRegion]:
    """The FusionRegions of a partitioned graph, in order."""
    return [m for m in gm.modules() if isinstance(m, FusionRegion)]
