"""fuser-fuzz: random multi-output fusions, compiled and checked against an independent float64
evaluation.

    fuser-fuzz --cases 1000 --seed 7            # CPU: compile (default pipeline, random options),
                                                # ptxas, reference interpreter vs float64
    fuser-fuzz --cases 1000 --gpu               # and run every kernel on the GPU
    fuser-fuzz --cases 200 --save-failures dir/ # failing cases, shrunk, as .mlir reproducers

Also `python3 -m fuser.tools.fuzz ...`. A seed gives one case (the same case every time): a
fusion of two to four outputs of different shapes and dtypes, compiled with one of
`OPTION_VARIANTS`, run on the GPU or by the reference interpreter, and compared with the
fuzzer's own float64 evaluation, to tolerances that follow from each output's dtype and
computation. The package:

    generator.py   the float part of a case (shapes, pointwise chains, reductions, statistics,
                   transposes, an optional matmul, the outputs) and `_Gen`, which writes its text
    typed.py       the typed part (four cases in five): comparisons, where, i1, integer (i8, i16,
                   i32, i64, u8), f64, f16 and bf16 values, the casts between them and integer
                   math (wrapping, divisions, bitwise ops, shifts, gcd), drawn from a stream of
                   its own
    semantics.py   the float64 evaluation, written apart from the reference interpreter: each op's
                   function, rounding magnitude and don't-care mask; the tolerances and `mismatch`
    runner.py      a case and its inputs from a seed, compiling and checking one, shrinking a
                   failure, the run
    explain.py     `--explain SEED`: where a case that fails on the GPU goes wrong
    cli.py         the command, `main`
"""

from . import cli, explain, generator, runner, semantics, typed
from .generator import BINARY, MATMUL_K, MATMUL_SHAPES, OUT_DTYPES, SHAPES, SHAPES_3D, UNARY, _Gen
from .cli import main
from .runner import (OPTION_VARIANTS, TYPED_SHARE, FuzzCase, check, fuzz_case, gpu_problem, make_inputs,
                     pipeline_for, random_fusion, run, shrink)
from .semantics import DISCRETE, LOWP, OVERFLOW, ROUNDING_SLACK, TOLERANCE, Step, Value, _cast, mismatch
from .typed import CAST_TYPES, CMP_PREDICATES

__all__ = [
    "main", "run", "fuzz_case", "random_fusion", "FuzzCase", "make_inputs", "check", "shrink", "gpu_problem",
    "pipeline_for", "OPTION_VARIANTS", "TYPED_SHARE",
    "mismatch", "TOLERANCE", "ROUNDING_SLACK", "OVERFLOW", "Value", "Step", "DISCRETE", "LOWP",
    "SHAPES", "SHAPES_3D", "MATMUL_SHAPES", "MATMUL_K", "UNARY", "BINARY", "OUT_DTYPES", "CMP_PREDICATES", "CAST_TYPES",
    "_Gen", "_cast",  # the tests' handles on the generator and the cast semantics
]

