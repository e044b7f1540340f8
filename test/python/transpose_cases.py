"""Transposes (permutes that move the input's contiguous dim), shared by the CPU test (each case
compiles to PTX, with the transpose kernel where expected) and the GPU test (each case matches
float64)."""

from __future__ import annotations


def _t(shape, dtype="f32"):
    return "tensor<" + "x".join(map(str, shape)) + f"x{dtype}>"


def permute(name, shape, perm, dtype="f32"):
    out = [shape[p] for p in perm]
    return name, f"""
func.func @{name}(%x: {_t(shape, dtype)}) -> {_t(out, dtype)} {{
  %p = fusion.permute %x {list(perm)} : {_t(shape, dtype)} to {_t(out, dtype)}
  func.return %p : {_t(out, dtype)}
}}"""


CASES = dict([
    permute("t1x1", (1, 1), (1, 0)),
    permute("t31x33", (31, 33), (1, 0)),
    permute("t1000x3", (1000, 3), (1, 0)),
    permute("t3x1000", (3, 1000), (1, 0)),
    permute("t257x513", (257, 513), (1, 0)),
    permute("t257x513_bf16", (257, 513), (1, 0), "bf16"),
    permute("t100x70_f16", (100, 70), (1, 0), "f16"),
    permute("t130x200_bf16", (130, 200), (1, 0), "bf16"),          # pairs: 64x64 tiles, ragged
    permute("b2x64x96_021_bf16", (2, 64, 96), (0, 2, 1), "bf16"),
    permute("b3x33x65_021", (3, 33, 65), (0, 2, 1)),
    permute("b3x33x65_210", (3, 33, 65), (2, 1, 0), "bf16"),
    permute("r4_0312", (2, 17, 40, 35), (0, 3, 1, 2)),
    permute("r4_3120", (20, 3, 5, 48), (3, 1, 2, 0)),
    ("fused_math", """
func.func @fused(%x: tensor<130x200xbf16>, %y: tensor<200x130xf32>) -> (tensor<200x130xf32>, tensor<200x130xbf16>) {
  %xf = fusion.cast %x : tensor<130x200xbf16> to tensor<130x200xf32>
  %e = fusion.exp %xf : tensor<130x200xf32>
  %p = fusion.permute %e [1, 0] : tensor<130x200xf32> to tensor<200x130xf32>
  %s = fusion.add %p, %y : tensor<200x130xf32>
  %t = fusion.tanh %s : tensor<200x130xf32>
  %o = fusion.cast %t : tensor<200x130xf32> to tensor<200x130xbf16>
  func.return %s, %o : tensor<200x130xf32>, tensor<200x130xbf16>
}"""),
    ("two_permutes", """
func.func @two(%x: tensor<48x80xf32>, %z: tensor<48x80xf32>) -> tensor<80x48xf32> {
  %p = fusion.permute %x [1, 0] : tensor<48x80xf32> to tensor<80x48xf32>
  %q = fusion.permute %z [1, 0] : tensor<48x80xf32> to tensor<80x48xf32>
  %m = fusion.mul %p, %q : tensor<80x48xf32>
  func.return %m : tensor<80x48xf32>
}"""),
    # a staged permute read elsewhere through an index map (GPU fuzz seeds 12028026 and 12016027:
    # the tile's element, valid at its own position only, was taken at every position)
    ("permute_read_by_index_select", """
func.func @f(%x: tensor<64x48xf32>, %i: tensor<48xi64>) -> (tensor<64x48xf32>, tensor<64x48xf32>) {
  %p = fusion.permute %x [1, 0] : tensor<64x48xf32> to tensor<48x64xf32>
  %q = fusion.permute %p [1, 0] : tensor<48x64xf32> to tensor<64x48xf32>
  %a = fusion.exp %q : tensor<64x48xf32>
  %b = fusion.index_select %q, %i dim 1 : tensor<64x48xf32>, tensor<48xi64> to tensor<64x48xf32>
  func.return %a, %b : tensor<64x48xf32>, tensor<64x48xf32>
}"""),
    ("permute_read_by_cat_of_slices", """
func.func @f(%x: tensor<31x33xf32>) -> (tensor<31x33xf32>, tensor<31x33xf32>) {
  %p = fusion.permute %x [1, 0] : tensor<31x33xf32> to tensor<33x31xf32>
  %q = fusion.permute %p [1, 0] : tensor<33x31xf32> to tensor<31x33xf32>
  %a = fusion.neg %q : tensor<31x33xf32>
  %even = fusion.slice %q start [0, 0] stop [31, 33] step [2, 1] : tensor<31x33xf32> to tensor<16x33xf32>
  %odd = fusion.slice %q start [1, 0] stop [31, 33] step [2, 1] : tensor<31x33xf32> to tensor<15x33xf32>
  %b = fusion.cat %even, %odd dim 0 : tensor<16x33xf32>, tensor<15x33xf32> to tensor<31x33xf32>
  func.return %a, %b : tensor<31x33xf32>, tensor<31x33xf32>
}"""),
])

TILED = {"t130x200_bf16", "b2x64x96_021_bf16", "t31x33", "t257x513", "t257x513_bf16", "t100x70_f16", "b3x33x65_021", "r4_0312",
         "r4_3120", "fused_math", "two_permutes", "permute_read_by_index_select", "permute_read_by_cat_of_slices"}
"""The cases the transpose kernel takes (the others have an output or input last dim too short to tile)."""
