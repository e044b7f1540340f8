"""The `fusion` dialect: what to compute, with no schedule.

Values are builtin `tensor<...>` types of static shape (symbolic extents are a later step: every
shape check goes through `types._dims`, the one place that would learn about `?`).
Element types are those of `types.DTYPE_NAMES`: f32, f16, bf16 and f64 for math (f16 and bf16
computed in f32, f64 in f64), and i1 (one byte per element), i8, i16, i32, i64 and ui8 (`u8`)
for inputs, outputs, casts, shape ops and the integer ops; f8E4M3FN and f8E5M2 (FP8, storage
only: casts, shape ops, full, where; no arithmetic, as in torch).

Binary ops take operands of one type: broadcasting and casting are explicit ops
(`fusion.broadcast`, `fusion.cast`), so every implicit conversion is visible in the IR.
Constants are `fusion.full`, a tensor filled with one value.

The package, by concern:
    types      dtype names and helpers, tensor checks, shared assembly helpers
    pointwise  unary and binary math, cmp, where, cast, full
    shape      broadcast, reshape, permute, slice, pad, cat, flip, gather, index_select, scatter, segment_set
    reduction  reduce, welford, var_mean
    scan       scan (cumsum, cumprod, cummax, cummin along the innermost dim)
    sort       sort (sort, argsort and topk along the innermost dim: values and i64 indices)
    creation   iota and the random numbers uniform, normal (Philox 4x32-10)
    matmul     matmul (and its split-K form)
    segment    segment (the ops of one kernel task, from fusion-segment or by hand) and yield

Everything is re-exported here, private helpers included, so `from fuser.dialects import fusion
as F` sees the same names as before the split.
"""

from __future__ import annotations

from xdsl.ir import Dialect

from .creation import CREATION_OPS, RANDOM_OPS, IotaOp, NormalOp, RandomOp, UniformOp
from .matmul import MatmulOp
from .pointwise import (
    APPROX_ATTR,
    BINARY_OPS,
    CMP_PREDICATES,
    POINTWISE_OPS,
    UNARY_OPS,
    AbsOp,
    AddOp,
    BinaryOp,
    CastOp,
    CmpOp,
    FLOAT_TEST_OPS,
    LOGICAL_OPS,
    LogicalAndOp,
    LogicalBinaryOp,
    LogicalNotOp,
    LogicalOrOp,
    LogicalXorOp,
    FloatTestOp,
    IsNanOp,
    IsInfOp,
    IsFiniteOp,
    IsPosInfOp,
    IsNegInfOp,
    SignbitOp,
    DivOp,
    ExpOp,
    FullOp,
    GeluOp,
    ErfOp,
    Exp2Op,
    Log2Op,
    Log10Op,
    Log1pOp,
    SinOp,
    CosOp,
    TanOp,
    AsinOp,
    AcosOp,
    AtanOp,
    SinhOp,
    CoshOp,
    AsinhOp,
    AcoshOp,
    AtanhOp,
    Expm1Op,
    ErfcOp,
    ErfinvOp,
    ErfcinvOp,
    LgammaOp,
    NextafterOp,
    ReciprocalOp,
    FloorOp,
    CeilOp,
    TruncOp,
    RoundOp,
    SignOp,
    LogOp,
    MaxOp,
    MinOp,
    MulOp,
    NegOp,
    PowOp,
    Atan2Op,
    FmodOp,
    RemainderOp,
    TruncDivOp,
    FloorDivOp,
    BitwiseNotOp,
    BitwiseAndOp,
    BitwiseOrOp,
    BitwiseXorOp,
    ShiftLeftOp,
    ShiftRightOp,
    LogicalShiftRightOp,
    GcdOp,
    BITWISE_OPS,
    ReluOp,
    RsqrtOp,
    SigmoidOp,
    SiluOp,
    SqrtOp,
    SubOp,
    TanhOp,
    UnaryOp,
    WhereOp,
    _float_text,
)
from .reduction import (
    REDUCE_INPUT_TYPES,
    REDUCE_KINDS,
    ReduceOp,
    VarMeanOp,
    WelfordOp,
    _parse_multi_result_reduction,
    _print_reduction_head,
    _reduced_shape,
    _ReductionBase,
    reduce_result_types,
)
from .scan import SCAN_INPUT_TYPES, SCAN_KINDS, ScanOp, scan_result_types
from .sort import SORT_INPUT_TYPES, SortOp
from .segment import SCHEDULERS, SegmentOp, YieldOp, new_segment
from .shape import (INDEX_MAP_OPS, INDEX_TYPES, INDEXED_OPS, SHAPE_OPS, BroadcastOp, CatOp, FlipOp, GatherOp, IndexSelectOp,
                    PadOp, PermuteOp, ReshapeOp, SCATTER_ATOMIC_TYPES, SCATTER_CHUNK, ScatterAddAtomicOp, ScatterOp, SegmentSetOp, SliceOp, AsStridedOp, strided_span)
from .types import (
    _CONVERT_FORMAT,
    DTYPE_NAMES,
    FLOAT_TYPES,
    FP8_DTYPES,
    FP8_TYPES,
    SELECT_TYPES,
    is_fp8,
    NARROW_FLOAT_TYPES,
    stat_type,
    _check_dims_list,
    _check_tensor,
    _ConvertLike,
    _ConvertLikeExtra,
    _dims,
    _elem,
    _fmt,
    _i64_array,
    _parse_int_list,
    _print_attrs,
    _print_int_list,
    dtype_name,
    INT_DTYPES,
    INT_TYPES,
    NUMERIC_TYPES,
    ORDERED_TYPES,
    is_float,
    is_integer,
    is_unsigned,
    ui8,
    tensor,
)

Fusion = Dialect(
    "fusion",
    [*UNARY_OPS, *BINARY_OPS, *FLOAT_TEST_OPS, *LOGICAL_OPS, CmpOp, WhereOp, CastOp, BroadcastOp, ReshapeOp, PermuteOp, SliceOp, PadOp, CatOp,
     FlipOp, AsStridedOp, GatherOp, IndexSelectOp, ScatterOp, ScatterAddAtomicOp, SegmentSetOp, FullOp,
     ReduceOp, WelfordOp, VarMeanOp, ScanOp, SortOp, MatmulOp, SegmentOp, YieldOp, *CREATION_OPS],
    [],
)

__all__ = [
    # types
    "FLOAT_TYPES", "NARROW_FLOAT_TYPES", "FP8_TYPES", "FP8_DTYPES", "SELECT_TYPES", "is_fp8", "stat_type", "DTYPE_NAMES", "dtype_name", "is_float", "is_integer", "is_unsigned", "INT_DTYPES", "ui8", "_dims", "_elem", "tensor", "_fmt", "_check_tensor",
    "_check_dims_list", "_print_int_list", "_parse_int_list", "_i64_array", "_print_attrs",
    "_ConvertLike", "_CONVERT_FORMAT", "_ConvertLikeExtra",
    # pointwise
    "APPROX_ATTR", "UnaryOp", "NegOp", "AbsOp", "ExpOp", "LogOp", "TanhOp", "SqrtOp", "RsqrtOp", "ReluOp", "SigmoidOp", "SiluOp",
    "GeluOp", "ErfOp", "Exp2Op", "Log2Op", "Log10Op", "Log1pOp", "ReciprocalOp", "FloorOp", "CeilOp", "TruncOp",
    "RoundOp", "SignOp", "SinOp", "CosOp", "TanOp", "AsinOp", "AcosOp", "AtanOp", "SinhOp", "CoshOp", "AsinhOp",
    "AcoshOp", "AtanhOp", "Expm1Op", "ErfcOp", "ErfinvOp", "ErfcinvOp",
    "LgammaOp", "UNARY_OPS", "BinaryOp", "AddOp", "SubOp", "MulOp", "DivOp", "MaxOp", "MinOp",
    "PowOp", "Atan2Op", "FmodOp", "RemainderOp", "TruncDivOp", "FloorDivOp", "NextafterOp", "BitwiseNotOp", "BitwiseAndOp",
    "BitwiseOrOp", "BitwiseXorOp", "ShiftLeftOp", "ShiftRightOp", "LogicalShiftRightOp", "GcdOp", "BITWISE_OPS", "INT_TYPES", "NUMERIC_TYPES",
    "ORDERED_TYPES",
    "BINARY_OPS",
    "FloatTestOp", "IsNanOp", "IsInfOp", "IsFiniteOp", "IsPosInfOp", "IsNegInfOp", "SignbitOp", "FLOAT_TEST_OPS",
    "LogicalNotOp", "LogicalBinaryOp", "LogicalAndOp", "LogicalOrOp", "LogicalXorOp", "LOGICAL_OPS",
    "CMP_PREDICATES", "CmpOp", "WhereOp", "CastOp", "FullOp", "_float_text", "POINTWISE_OPS",
    # creation
    "IotaOp", "RandomOp", "UniformOp", "NormalOp", "RANDOM_OPS", "CREATION_OPS",
    # shape
    "BroadcastOp", "ReshapeOp", "PermuteOp", "SliceOp", "PadOp", "CatOp", "FlipOp", "AsStridedOp", "strided_span", "SegmentSetOp", "SHAPE_OPS",
    "INDEX_MAP_OPS", "INDEXED_OPS", "INDEX_TYPES", "GatherOp", "IndexSelectOp", "ScatterOp", "SCATTER_CHUNK", "ScatterAddAtomicOp", "SCATTER_ATOMIC_TYPES",
    # reduction
    "REDUCE_KINDS", "REDUCE_INPUT_TYPES", "reduce_result_types", "_reduced_shape", "_ReductionBase", "_print_reduction_head", "ReduceOp",
    "_parse_multi_result_reduction", "WelfordOp", "VarMeanOp",
    # scan
    "SCAN_KINDS", "SCAN_INPUT_TYPES", "scan_result_types", "ScanOp",
    # sort
    "SORT_INPUT_TYPES", "SortOp",
    # matmul
    "MatmulOp",
    # segment
    "SegmentOp", "YieldOp", "SCHEDULERS", "new_segment",
    # the dialect
    "Fusion",
]
