"""fuser-bench: fusions side by side with torch eager and torch.compile, on one GPU, in one run.

    fuser-bench                              # every workload at full size, table on stdout
    fuser-bench --quick                      # small shapes: a smoke run in seconds
    fuser-bench --filter 'row_sum|col_sum' --json bench-results/sums.json --png bench-results/sums.png
    fuser-bench --list                       # the registry (needs no GPU, no torch)
    fuser-bench --show-mlir --filter scale_f32   # the fusion IR a workload compiles
    fuser-bench --models --quick --filter gpt2   # whole models: eager, Inductor, fuser (model_bench.py)

Also `python3 -m fuser.tools.bench ...`. The package:

    workloads.py   the registry: each fusion built with fuser.FusionBuilder, its torch eager /
                   torch.compile peer and its bytes / FLOPs
    timing.py      the harness: inputs (rotated through L2), correctness before timing, warm-up and
                   CUDA-event medians after a clean L2 flush, two rounds in opposite peer order; the row results
    report.py      the table, the notes above it, --list, the JSON document and the PNG chart
    cli.py         argument parsing and `main`
    models.py, model_bench.py   `--models`: whole models trained and run by eager, Inductor and fuser

Method (see PERF.md): every row is checked for correctness against torch eager before it is
timed (a fast wrong kernel is a FAIL, not a number); times are medians of per-call CUDA-event
timings after warm-up, each call after a 256 MB read that evicts L2 and leaves it clean (a
zero-filled flush, as triton's do_bench uses, charges its write-backs to the timed call); inputs that fit in L2
are rotated through enough copies to exceed it; inputs are random, never zeros; tensor-core
(TFLOP/s) rows are timed in two rounds in opposite peer orders, keeping each peer's faster
median, so that no peer alone runs on the boost clock of a cool GPU. Ratios are
peer time / fuser time, so > 1 means fuser is faster. "% ceil" is the fuser rate over the
measured device-to-device copy bandwidth (GB/s rows) or over the bf16 tensor-core peak
(TFLOP/s rows).

The registry is a list of small `Workload` records built by one function per family; a new
capability adds a family function (a FusionBuilder fusion + torch reference + bytes/FLOPs) in
workloads.py and registers its shapes. torch, triton and matplotlib are imported lazily, so
`--list` and the tests run on a machine that has none of them.

Families (`--list` shows every row; `--filter` matches names and families):

    copy              torch y.copy_(x): the bandwidth anchor (GB/s read + written)
    pointwise         x*2, gelu_tanh(x*y + b)
    row_sum, col_sum, sum_all       f32-accumulated sums over the last / first / only axis
    var_mean          (var, mean), correction 1, last axis, f32 out; PERF.md's three shapes
    var_mean_dim0     the same over the first axis at 32768x4096 (compare with col_sum)
    layer_norm        (x - mean) * rsqrt(var + 1e-5) * w + b, last axis; bytes read + written
    rms_norm          x * rsqrt(mean(x^2) + 1e-5) * w, last axis
    matmul            bf16 A[M,K] @ B[K,N] -> bf16, f32 accumulation; shapes are MxNxK (TFLOP/s),
                      PERF.md's large shapes and its four large-K ones (split-K)
    matmul_bias_relu, matmul_bias_gelu   the same with relu(c + bias) / gelu_tanh(c + bias)

Rows never abort the run: a fusion the compiler rejects as not supported (yet) is reported as
`unsupported` (its torch peers are still timed; it does not change the exit status), any other
compile or launch error as ERROR, a wrong result as FAIL (exit status 1 for FAIL or ERROR).
If a kernel fault loses the CUDA context, the rows after it are listed as not run.

The names below are re-exported for callers of the former single-module `fuser.tools.bench`
(e.g. `from fuser.tools.bench import matmul`); to replace a function in a test, patch it in the
submodule that calls it (`fuser.tools.bench.timing.gpu_problem`, ...).
"""

from .cli import main, parse_args
from .report import draw_png, environment, format_table, list_workloads, notes, write_json
from .timing import BAD_STATUSES, Bench, PeerResult, RowResult, gpu_problem, is_unsupported, rate_of, run_all
from .workloads import (WORKLOADS, Workload, bias_gelu, copy_anchor, fmt_shape, layer_norm, matmul, nbytes,
                        reduction_sum, register, rms_norm, scale, select, ttype, var_mean)

__all__ = [
    "main", "parse_args",
    "Workload", "WORKLOADS", "register", "select", "ttype", "nbytes", "fmt_shape",
    "copy_anchor", "scale", "bias_gelu", "reduction_sum", "var_mean", "layer_norm", "rms_norm", "matmul",
    "Bench", "PeerResult", "RowResult", "BAD_STATUSES", "gpu_problem", "is_unsupported", "rate_of", "run_all",
    "format_table", "notes", "list_workloads", "environment", "write_json", "draw_png",
]
