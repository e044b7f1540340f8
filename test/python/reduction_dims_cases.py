"""Reductions over dimension sets that are neither leading nor trailing (middle dims, several
non-adjacent dims, keepdim), shared by the CPU test (every case compiles to PTX) and the GPU
test (every case matches float64)."""

from __future__ import annotations


def _reduce(name, shape, dims, kind="sum", dtype="f32", keepdim=False, out_dtype=None):
    rank = len(shape)
    out = [1 if (i in dims and keepdim) else e for i, e in enumerate(shape) if keepdim or i not in dims]
    t_in = "tensor<" + "x".join(map(str, shape)) + f"x{dtype}>"
    od = out_dtype or dtype
    t_out = "tensor<" + "x".join(map(str, out)) + f"x{od}>"
    attrs = f' {{dtype = "{od}"}}' if od != dtype else ""
    kd = " keepdim" if keepdim else ""
    assert rank == len(shape)
    return name, f"""
func.func @{name}(%x: {t_in}) -> {t_out} {{
  %r = fusion.reduce {kind} %x dims {list(dims)}{kd}{attrs} : {t_in} to {t_out}
  func.return %r : {t_out}
}}"""


CASES = dict([
    _reduce("mid_sum_3x37x5", (3, 37, 5), [1]),
    _reduce("mid_sum_7x129x33", (7, 129, 33), [1]),
    _reduce("mid_max_bf16", (5, 64, 96), [1], "max", "bf16"),
    _reduce("mid_sum_bf16_f32", (6, 300, 40), [1], "sum", "bf16", out_dtype="f32"),
    _reduce("mid_min_keepdim", (4, 17, 12), [1], "min", keepdim=True),
    _reduce("dims_1_3", (2, 3, 4, 5), [1, 3]),
    _reduce("dims_0_2", (2, 3, 4, 5), [0, 2], "max"),
    _reduce("dims_0_2_keepdim", (3, 9, 65), [0, 2], keepdim=True),
    _reduce("dims_1_2_of_4d", (3, 5, 7, 8), [1, 2]),
    _reduce("tall_middle_split", (2, 65536, 8), [1]),
    _reduce("long_ends_split", (64, 3, 4096), [0, 2]),
    ("mid_var_mean", """
func.func @mid_var_mean(%x: tensor<6x200x24xf32>) -> (tensor<6x24xf32>, tensor<6x24xf32>) {
  %v, %m = fusion.var_mean %x dims [1] correction 1 : tensor<6x200x24xf32> to tensor<6x24xf32>, tensor<6x24xf32>
  func.return %v, %m : tensor<6x24xf32>, tensor<6x24xf32>
}"""),
    ("ends_welford_bf16", """
func.func @ends_welford(%x: tensor<5x11x130xbf16>) -> (tensor<11xf32>, tensor<11xf32>) {
  %xf = fusion.cast %x : tensor<5x11x130xbf16> to tensor<5x11x130xf32>
  %a, %m2, %n = fusion.welford %xf dims [0, 2] : tensor<5x11x130xf32> to tensor<11xf32>, tensor<11xf32>, tensor<11xi64>
  func.return %a, %m2 : tensor<11xf32>, tensor<11xf32>
}"""),
    ("mid_sum_with_epilogue", """
func.func @mid_epilogue(%x: tensor<8x33x20xf32>, %b: tensor<8x20xf32>) -> (tensor<8x20xbf16>, tensor<8x33x20xf32>) {
  %e = fusion.exp %x : tensor<8x33x20xf32>
  %s = fusion.reduce sum %e dims [1] : tensor<8x33x20xf32> to tensor<8x20xf32>
  %t = fusion.add %s, %b : tensor<8x20xf32>
  %o = fusion.cast %t : tensor<8x20xf32> to tensor<8x20xbf16>
  func.return %o, %e : tensor<8x20xbf16>, tensor<8x33x20xf32>
}"""),
])
