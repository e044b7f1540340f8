"""The `torch.compile` backend: `torch.compile(model, backend="fuser")` (registered through the
`torch_dynamo_backends` entry point) or `backend=fuser.torch.backend(pipeline=..., ...)`.

AOTAutograd (torch's own) gives forward and backward ATen graphs, split by one of torch's
partitioners (by default the min-cut one that Inductor uses: it saves few activations for the
backward and recomputes cheap pointwise ops there instead, which a fusion compiler does for free
inside the backward's kernels); a few decompositions from torch._decomp turn ops the table lacks
into ops it has. Each graph is partitioned (partition.py) into fuser regions and PyTorch nodes.

Input mutations (issue 32) stay in the graphs (AOTAutograd's keep_inference_input_mutations, as
Inductor asks): an `aten.copy_(input, value)` at the end of a graph whose value a region computes
from that input becomes an in-place output of the region (partition.input_mutations), which its
kernels write into the input's storage; `stats.inplace_outputs` counts them. Batch norm in
training (its running statistics) and a compiled `p.add_(...)` are the common cases.
"""

from __future__ import annotations

import copy
import logging
import os
import time
from typing import Any

import torch
import torch.fx as fx
from functorch.compile import default_partition, make_boxed_func, min_cut_rematerialization_partition
from torch._decomp import get_decompositions
from torch._dynamo.backends.common import aot_autograd

from .causal_attention import restore_causal_attention
from .partition import Stats, partition_graph, precompile, regions, start_compile_workers

log = logging.getLogger("fuser.torch")

aten = torch.ops.aten

# Ops whose decomposition (torch._decomp's, as Inductor uses it) lands in the table.
DECOMPOSED = [
    aten._softmax, aten._log_softmax, aten._softmax_backward_data, aten._log_softmax_backward_data,
    aten.hardtanh, aten.hardtanh_backward, aten.leaky_relu, aten.leaky_relu_backward,
    aten.mse_loss, aten.mse_loss_backward, aten.addcmul, aten.addcdiv, aten.lerp,
    aten.elu, aten.elu_backward, aten.softplus, aten.softplus_backward, aten.square,
    aten.nll_loss_forward, aten.nll_loss_backward,
    # autograd saves tanh's output for its backward through detach, which the min-cut partitioner
    # will not recompute through: decomposed (an alias), HF GPT-2's GELU saves nothing but its input
    aten.detach,
    # batch norm in training: its statistics (var_mean) and the running statistics' update, which
    # the graph then copies into the module's buffers (made in-place outputs: partition.py)
    aten._native_batch_norm_legit_functional, aten._native_batch_norm_legit_no_training,
    aten.native_batch_norm_backward,
]

EXECUTORS = ("auto", "reference", "torch")
PARTITIONERS = ("min_cut", "default")


def _cuda_available() -> bool:
    return torch.cuda.is_available()


def log_setting() -> bool | str:
    """FUSER_TORCH_LOG: unset, empty or 0 -> off; "ir" -> regions with their IR; else on."""
    v = os.environ.get("FUSER_TORCH_LOG", "").strip().lower()
    if v in ("", "0", "false", "off"):
        return False
    return "ir" if v == "ir" else True


def _enable_logging() -> None:
    log.setLevel(logging.DEBUG)
    if not log.handlers and not logging.getLogger().handlers:
        log.addHandler(logging.StreamHandler())


class FuserBackend:
    """A configured backend: call it as torch.compile calls a backend, (gm, example_inputs).

    pipeline, options: passed to `fuser.api.compile` for regions on the GPU.
    executor: "auto" (CPU tensors: the reference interpreter; CUDA tensors: compiled kernels),
        "reference" (the interpreter always, through host copies), "torch" (regions run as their
        PyTorch ops: isolates a translation bug from a partitioning one).
    debug: log (logger "fuser.torch", INFO) each region (its ops and fusion symbol), its compile
        time and each node left to PyTorch with the reason; debug="ir" also logs each region's
        fusion IR. Without it, the environment variable FUSER_TORCH_LOG=1 (or =ir) does the same,
        read when a graph is compiled.
    decompositions: extra ATen decompositions on top of DECOMPOSED.
    compile_workers: processes that compile a graph's distinct CUDA fusions at once when the graph
        is compiled (default: this process's share of the CPUs it may run on, the CPUs divided
        by torchrun's LOCAL_WORLD_SIZE, at most 16; 0 or 1: each compiles on its first call).
    pad_matmuls: pad large bf16/f16 mm / addmm whose operands' rows are not 16-byte aligned
        (GPT-2's 50257-wide vocabulary) with zeros to aligned ones first (pad_matmuls.py; default on).
    causal_attention: give `scaled_dot_product_attention` is_causal=True in place of a mask that
        is computed from constants and equals the causal mask (Hugging Face models build one under
        torch.compile; causal_attention.py; default on). `stats.causal_masks` counts them.
    partitioner: how AOTAutograd splits the joint graph into forward and backward: "min_cut"
        (default; torch's min_cut_rematerialization_partition, Inductor's choice: the forward saves
        what minimizes the bytes between the two and the backward recomputes cheap ops) or
        "default" (torch's default_partition: the forward saves every intermediate the backward
        reads).
    cudagraphs: capture each compiled graph's launches (fuser's kernels and the PyTorch ops
        between them) in a CUDA graph and replay it, as Inductor's mode="reduce-overhead" does,
        with torch's own machinery (its CUDA graph trees: inputs other than parameters and buffers
        are copied into static buffers before each replay; forward and backward of a training step
        are captured alike). Off by default; needs CUDA (a RuntimeError without it) and the "auto"
        or "torch" executor. A graph torch's own checks find unfit (inputs it mutates, CPU
        tensors) runs without one, counted in `stats.cudagraph_skips` and logged.
    """

    def __init__(self, pipeline: Any = "default", options: dict[str, Any] | None = None, debug: bool | str = False,
                 executor: str = "auto", decompositions: dict | None = None, compile_workers: int | None = None,
                 pad_matmuls: bool = True, partitioner: str = "min_cut", cudagraphs: bool = False,
                 causal_attention: bool = True):
        if executor not in EXECUTORS:
            raise ValueError(f"executor must be one of {EXECUTORS}, got {executor!r}")
        if partitioner not in PARTITIONERS:
            raise ValueError(f"partitioner must be one of {PARTITIONERS}, got {partitioner!r}")
        if cudagraphs:
            if executor == "reference":
                raise ValueError("cudagraphs=True needs executor='auto' or 'torch' (the reference executor copies "
                                 "to the host, which a CUDA graph cannot capture)")
            if not _cuda_available():
                raise RuntimeError("fuser.torch.backend(cudagraphs=True) needs CUDA: torch finds no CUDA device here "
                                   f"(torch {torch.__version__}); leave cudagraphs off to run without CUDA graphs")
        self.cudagraphs = bool(cudagraphs)
        self.causal_attention = bool(causal_attention)
        self.config = {"pipeline": pipeline, "options": options, "debug": debug, "executor": executor,
                       "pad_matmuls": pad_matmuls}
        self.compile_workers = compile_workers
        self._graph_state: dict[str, Any] = {"dynamo_inputs": 0, "capture": True, "device": None}
        self.stats = Stats()
        self.graphs: list[tuple[str, fx.GraphModule]] = []  # (forward/backward/inference, partitioned graph)
        decomps = get_decompositions(DECOMPOSED)
        decomps.update(decompositions or {})
        self._partition = min_cut_rematerialization_partition if partitioner == "min_cut" else default_partition
        self._next_backward: fx.GraphModule | None = None  # the backward of the forward compiled next
        # the backward partitioned ahead with its forward: (the graph's fingerprint, the
        # partitioned copy, the Stats its partition wrote), taken by the backward's compile when
        # AOTAutograd hands it the same graph
        self._ahead: tuple[str, fx.GraphModule, Stats] | None = None
        self._aot = aot_autograd(fw_compiler=self._compiler("forward"), bw_compiler=self._compiler("backward"),
                                 inference_compiler=self._compiler("inference"), decompositions=decomps,
                                 keep_inference_input_mutations=True, partition_fn=self._split_joint)
        self.__name__ = "fuser"

    def _split_joint(self, joint: fx.GraphModule, inputs: Any, **kwargs: Any) -> tuple[fx.GraphModule, fx.GraphModule]:
        """The partitioner's split of the joint graph; the backward is kept for the forward's
        compile, which precompiles its fusions too (AOTAutograd compiles a backward only when it
        first runs, so its compile would otherwise start after the forward's has ended)."""
        fw, bw = self._partition(joint, inputs, **kwargs)
        self._next_backward = bw
        return fw, bw

    def _backward_regions(self, config: dict[str, Any], wanted: bool) -> list[Any]:
        """The fusion regions of the backward split off with the forward being compiled (on a
        copy of its graph: AOTAutograd gives the graph itself to the backward compiler later,
        whose regions then find these fusions compiled). Nothing when not `wanted` (no CUDA
        region to precompile: the copy and partition would be wasted), when there is none, or
        when partitioning it fails here: the backward compiler meets that again, and reports it."""
        bw, self._next_backward = self._next_backward, None
        if bw is None or not wanted:
            return []
        try:
            with torch._subclasses.fake_tensor.unset_fake_temporarily():  # (as AOTAutograd copies it)
                copied = copy.deepcopy(bw)
            stats, start = Stats(), time.perf_counter()
            fused = partition_graph(copied, config, stats, "backward")
            self.stats.partition_seconds += time.perf_counter() - start
            self._ahead = (_fingerprint(bw), fused, stats)
            return regions(fused)
        except Exception as e:  # noqa: BLE001 - only a head start is lost
            log.info("backward regions not precompiled with the forward: %s", e)
            return []

    def _take_ahead(self, gm: fx.GraphModule) -> fx.GraphModule | None:
        """The backward partitioned ahead, if `gm` is the graph it was partitioned from (its code and
        its inputs' example values the same): its regions then count in this backend's Stats. None
        otherwise (it is partitioned again)."""
        ahead, self._ahead = self._ahead, None
        if ahead is None or ahead[0] != _fingerprint(gm):
            return None
        _, fused, stats = ahead
        self.stats.add(stats)
        for r in regions(fused):
            r.stats = self.stats
        return fused

    def _compiler(self, kind: str):
        def compile_graph(gm: fx.GraphModule, example_inputs: list[Any]):
            config = dict(self.config, debug=self.config["debug"] or log_setting())
            if config["debug"]:
                _enable_logging()
            start = time.perf_counter()
            fused = (self._take_ahead(gm) if kind == "backward" else None) or partition_graph(gm, config, self.stats, kind)
            self.stats.partition_seconds += time.perf_counter() - start
            self.graphs.append((kind, fused))
            workers = self.compile_workers if self.compile_workers is not None else default_compile_workers()
            # the forward's fusions and its backward's in one batch (largest first): the backward's
            # fill the workers that the forward's longest compiles leave idle
            mine = regions(fused)
            ahead = self._backward_regions(config, any(r.device == "cuda" for r in mine)) if kind == "forward" else []
            seconds = precompile(mine + ahead, workers)
            self.stats.precompile_seconds += seconds
            if seconds and config["debug"]:
                log.info("%s: regions compiled in %d processes in %.1f s", kind, workers, seconds)
            run = make_boxed_func(fused.forward)
            return self._cudagraphify(kind, gm, run, example_inputs) if self.cudagraphs else run
        return compile_graph

    def _cudagraphify(self, kind: str, gm: fx.GraphModule, run: Any, example_inputs: list[Any]) -> Any:
        """`run` (a boxed function) replayed from a CUDA graph by torch's CUDA graph trees, as
        torch's own "cudagraphs" backend wires them: parameters and buffers (the forward's leading
        inputs) are static, the rest copied in; or `run` itself where torch's checks refuse."""
        from torch._dynamo.backends import cudagraphs as tcg
        from torch._inductor import cudagraph_trees
        from torch._inductor.cudagraph_utils import get_placeholder_info
        from torch._inductor.utils import count_tangents, num_fw_fixed_arguments

        state = self._graph_state
        if kind == "backward":
            if not state["capture"]:  # its forward runs without a graph: so does it
                return run
            fixed = count_tangents(gm)
        else:
            fixed = num_fw_fixed_arguments(state["dynamo_inputs"], len(example_inputs))
        why = tcg.check_for_skip(gm, fixed)
        if why:
            self.stats.cudagraph_skips += 1
            log.info("%s graph runs without a CUDA graph: %s", kind, why)
            if kind != "backward":
                state["capture"] = False
                return run
            manager = cudagraph_trees.get_manager(state["device"] or 0, create_if_none_exists=False)

            def backward(inputs: list[Any]) -> Any:  # its forward was captured: tell the tree
                if manager is not None:
                    manager.set_to_running_backward()
                return run(inputs)
            backward._boxed_call = True
            return backward
        device = tcg.get_device_index(gm)
        if kind != "backward":
            state["device"] = device

        def model(inputs: list[Any]) -> Any:  # the boxed convention the trees keep: the callee clears its inputs
            args = list(inputs)
            inputs.clear()
            return run(args)
        out = cudagraph_trees.cudagraphify_impl(
            model, example_inputs, range(fixed), device_index=device, is_backward=kind == "backward",
            is_inference=kind == "inference", stack_traces=tcg.get_stack_traces(gm),
            placeholders=get_placeholder_info(gm.graph), mutated_input_idxs=tcg.find_input_mutations(gm.graph))
        out._boxed_call = True
        return out

    def __call__(self, gm: fx.GraphModule, example_inputs: list[Any], **kwargs: Any):
        # per Dynamo graph: its input count (the forward's parameters come first) and whether its
        # forward was captured (its backward is captured only then), for cudagraphs=True
        self._graph_state = {"dynamo_inputs": len(example_inputs), "capture": True, "device": None}
        if self.causal_attention:  # on the torch-level graph, so that AOTAutograd traces the causal kernels
            self.stats.causal_masks += restore_causal_attention(gm)
        if self.config["executor"] == "auto" and _any_cuda(example_inputs):  # (precompile's workers start now)
            start_compile_workers(self.compile_workers if self.compile_workers is not None else default_compile_workers())
        return self._aot(gm, example_inputs, **kwargs)

    def regions(self):
        """Every FusionRegion compiled so far."""
        return [r for _, g in self.graphs for r in regions(g)]

    def reset(self) -> None:
        self.stats.__init__()  # in place: compiled regions count into this object
        self.graphs.clear()


def _any_cuda(values: list[Any]) -> bool:
    return any(isinstance(v, torch.Tensor) and v.is_cuda for v in values)


def default_compile_workers() -> int:
    """Compile workers for this process: its CPUs shared with the other ranks on the machine (a
    torchrun job's LOCAL_WORLD_SIZE), at most 16."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    try:
        ranks = max(1, int(os.environ.get("LOCAL_WORLD_SIZE", "1")))
    except ValueError:
        ranks = 1
    return max(1, min(16, cpus // ranks))


def _fingerprint(gm: fx.GraphModule) -> str:
    """A graph's code and its inputs' example values (shape, dtype, strides)."""
    metas = [(tuple(v.shape), v.dtype, tuple(v.stride())) if isinstance(v := n.meta.get("val"), torch.Tensor) else repr(v)
             for n in gm.graph.nodes if n.op == "placeholder"]
    return gm.code + repr(metas)


def backend(pipeline: Any = "default", options: dict[str, Any] | None = None, debug: bool | str = False,
            executor: str = "auto", decompositions: dict | None = None,
            compile_workers: int | None = None, pad_matmuls: bool = True, partitioner: str = "min_cut",
            cudagraphs: bool = False, causal_attention: bool = True) -> FuserBackend:
    """A torch.compile backend with these settings: `torch.compile(m, backend=fuser.torch.backend(...))`."""
    return FuserBackend(pipeline=pipeline, options=options, debug=debug, executor=executor,
                        decompositions=decompositions, compile_workers=compile_workers, pad_matmuls=pad_matmuls,
                        partitioner=partitioner, cudagraphs=cudagraphs, causal_attention=causal_attention)


# The backend the `torch_dynamo_backends` entry point registers as "fuser".
fuser_backend = FuserBackend()
