// RUN: fuser-opt %s --split-input-file --verify-diagnostics -p convert-fusion-to-sched -o /dev/null

// A segment's `fuser.plan` is read as schedule options: an entry that is not one, a value of
// the wrong type, a value past a limit or a plan that is not a dictionary is a located error.


func.func @unknown(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{fuser.plan entry 'blocks' is not a schedule option (known: sms, block, vector, split, persistent, tile, stages, matmul_persistent, matmul_pingpong, matmul_cluster, matmul_store, matmul_smem_reuse, matmul_epilogue_work)}}
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64xf32>) -> (tensor<64xf32>) attributes {fuser.plan = {blocks = 128 : i64}} {
    %e = fusion.add %xs, %xs : tensor<64xf32>
    fusion.yield %e : tensor<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// -----

func.func @typed(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{fuser.plan entry 'block' must be an i64 integer, got "128"}}
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64xf32>) -> (tensor<64xf32>) attributes {fuser.plan = {block = "128"}} {
    %e = fusion.add %xs, %xs : tensor<64xf32>
    fusion.yield %e : tensor<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// -----

func.func @limit(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{block must be at most 1024 (CUDA's limit on threads per block), got 2048}}
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64xf32>) -> (tensor<64xf32>) attributes {fuser.plan = {block = 2048 : i64}} {
    %e = fusion.add %xs, %xs : tensor<64xf32>
    fusion.yield %e : tensor<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// -----

func.func @not_a_dict(%x: tensor<64xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{fuser.plan must be a dictionary of schedule options, got 128 : i64}}
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64xf32>) -> (tensor<64xf32>) attributes {fuser.plan = 128 : i64} {
    %e = fusion.add %xs, %xs : tensor<64xf32>
    fusion.yield %e : tensor<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// -----

// A segment with a plan is read as one task of the scheduler it names, not planned again: a
// body that is not one is a located error.
func.func @not_its_task(%x: tensor<64x128xf32>) -> tensor<64xf32> {
  // expected-error @+1 {{fusion.segment "pointwise" holds a reduction or matmul: its ops are not one task of that scheduler (drop its fuser.plan to have it planned, or its scheduler name too to have fusion-segment split it)}}
  %y = fusion.segment "pointwise" (%xs = %x : tensor<64x128xf32>) -> (tensor<64xf32>) attributes {fuser.plan = {block = 128 : i64}} {
    %r = fusion.reduce sum %xs dims [1] : tensor<64x128xf32> to tensor<64xf32>
    fusion.yield %r : tensor<64xf32>
  }
  func.return %y : tensor<64xf32>
}

// -----

func.func @rows_too_long(%x: tensor<4x1048576xf32>) -> tensor<4x1048576xf32> {
  // expected-error @+1 {{fusion.segment "normalization" cannot keep its rows on chip}}
  %y = fusion.segment "normalization" (%xs = %x : tensor<4x1048576xf32>) -> (tensor<4x1048576xf32>) attributes {fuser.plan = {persistent = true}} {
    %s = fusion.reduce sum %xs dims [1] : tensor<4x1048576xf32> to tensor<4xf32>
    %b = fusion.broadcast %s dims [1] : tensor<4xf32> to tensor<4x1048576xf32>
    %d = fusion.sub %xs, %b : tensor<4x1048576xf32>
    fusion.yield %d : tensor<4x1048576xf32>
  }
  func.return %y : tensor<4x1048576xf32>
}
