// RUN: fuser-opt %s --split-input-file -p fusion-split-k | filecheck %s --check-prefix=AUTO
// RUN: not fuser-opt %s --split-input-file -p 'fusion-split-k{strategy=serial factor=4}' 2>/dev/null | filecheck %s --check-prefix=FOUR
// RUN: not fuser-opt %s --split-input-file -p 'fusion-split-k{strategy=serial}' 2>&1 | filecheck %s --check-prefix=SERIAL

// strategy=auto (the default) asks the cost model (lowering/heuristics/split_k.py) for the
// time of each strategy and takes the fastest; the decision and the modelled times are in
// fuser.split_k. The serial form keeps the result's type and its uses: the splits reduce
// inside the matmul kernel, whose last split runs the epilogue.

// 256x4096x16384: 2 splits make a full wave of 128x128 tiles; one serial turn costs less
// than the two-kernel sum (measured on the H100: 1.04x against 1.01x cuBLAS).
// AUTO-LABEL: func.func @wide
// AUTO-NEXT:    %c = fusion.matmul %a, %b k_chunk 8192 serial {fuser.split_k = "split 2 ways, k_chunk=8192, serial (64 tiles of 128x128 on 132 SMs, K=16384; model: serial 70 us, two-kernel 71 us, unsplit 111 us)"} : tensor<256x16384xbf16>, tensor<16384x4096xbf16> -> tensor<256x4096xbf16>
// AUTO-NEXT:    %o = fusion.relu %c : tensor<256x4096xbf16>
// AUTO-NEXT:    func.return %o
// FOUR-LABEL: func.func @wide
// FOUR-NEXT:    %c = fusion.matmul %a, %b k_chunk 4096 serial {fuser.split_k = "split 4 ways, k_chunk=4096, serial (factor=4, K=16384)"} : {{.*}} -> tensor<256x4096xbf16>
func.func @wide(%a: tensor<256x16384xbf16>, %b: tensor<16384x4096xbf16>) -> tensor<256x4096xbf16> {
  %c = fusion.matmul %a, %b : tensor<256x16384xbf16>, tensor<16384x4096xbf16> -> tensor<256x4096xbf16>
  %o = fusion.relu %c : tensor<256x4096xbf16>
  func.return %o : tensor<256x4096xbf16>
}

// -----
// 128x128x131072: one tile needs 64 to 128 splits to stream its operands with the machine;
// 63 serial turns would cost far more than the partials' round trip, so the model keeps two kernels.
// AUTO-LABEL: func.func @one_tile
// AUTO-NEXT:    fusion.matmul %a, %b k_chunk 2048 {fuser.split_k = "split 64 ways, k_chunk=2048 (1 tile of 128x128 on 132 SMs, K=131072; model: serial {{[0-9]+}} us, two-kernel {{[0-9]+}} us, unsplit {{[0-9]+}} us)"} : {{.*}} -> tensor<64x128x128xf32>
// AUTO-NEXT:    fusion.reduce sum
func.func @one_tile(%a: tensor<128x131072xbf16>, %b: tensor<131072x128xbf16>) -> tensor<128x128xf32> {
  %c = fusion.matmul %a, %b : tensor<128x131072xbf16>, tensor<131072x128xbf16> -> tensor<128x128xf32>
  func.return %c : tensor<128x128xf32>
}

// -----
// 8192^3 fills the machine unsplit: kept, whatever the strategy.
// AUTO-LABEL: func.func @large
// AUTO-NEXT:    fusion.matmul %a, %b {fuser.split_k = "kept (2048 tiles of 128x256 fill 132 SMs)"}
func.func @large(%a: tensor<8192x8192xbf16>, %b: tensor<8192x8192xbf16>) -> tensor<8192x8192xf32> {
  %c = fusion.matmul %a, %b : tensor<8192x8192xbf16>, tensor<8192x8192xbf16> -> tensor<8192x8192xf32>
  func.return %c : tensor<8192x8192xf32>
}

// -----
// N = 4098 cannot take the serial strategy (the f32 workspace's rows must be a multiple of 16
// bytes): auto keeps two kernels and says why; forcing serial is an error at the matmul.
// AUTO-LABEL: func.func @odd_n
// AUTO-NEXT:    fusion.matmul %a, %b transpose_b k_chunk 8192 {fuser.split_k = "split 2 ways, k_chunk=8192 (66 tiles of 128x128 on 132 SMs, K=16384; not serial: N=4098: the f32 workspace's rows must be a multiple of 16 bytes (N a multiple of 4))"}
// SERIAL: serial.mlir:[[# @LINE + 2]]:3: error: pass 'fusion-split-k' failed: fusion-split-k: strategy=serial: N=4098: the f32 workspace's rows must be a multiple of 16 bytes (N a multiple of 4); use strategy=two-kernel or auto
func.func @odd_n(%a: tensor<256x16384xbf16>, %b: tensor<4098x16384xbf16>) -> tensor<256x4098xf32> {
  %c = fusion.matmul %a, %b transpose_b : tensor<256x16384xbf16>, tensor<4098x16384xbf16> -> tensor<256x4098xf32>
  func.return %c : tensor<256x4098xf32>
}
