// RUN: fuser-opt %s --split-input-file --verify-diagnostics

func.func @unknown_scheduler(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.segment' op names scheduler 'transpose'; expected one of pointwise, reduction, normalization, matmul}}
  %s = fusion.segment "transpose" (%xs = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %e = fusion.exp %xs : tensor<4xf32>
    fusion.yield %e : tensor<4xf32>
  }
  func.return %s : tensor<4xf32>
}

// -----
func.func @yield_types(%x: tensor<4xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'fusion.segment' op yields (tensor<4xf32>) but its results are (tensor<4xbf16>)}}
  %s = fusion.segment (%xs = %x : tensor<4xf32>) -> (tensor<4xbf16>) {
    %e = fusion.exp %xs : tensor<4xf32>
    fusion.yield %e : tensor<4xf32>
  }
  func.return %s : tensor<4xbf16>
}

// -----
func.func @nested(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.segment' op holds another fusion.segment: segments do not nest}}
  %s = fusion.segment (%xs = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %t = fusion.segment (%xt = %xs : tensor<4xf32>) -> (tensor<4xf32>) {
      fusion.yield %xt : tensor<4xf32>
    }
    fusion.yield %t : tensor<4xf32>
  }
  func.return %s : tensor<4xf32>
}

// -----
func.func @not_isolated(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.segment' op Operation using value defined out of its IsolatedFromAbove parent}}
  %s = fusion.segment (%xs = %x : tensor<4xf32>) -> (tensor<4xf32>) {
    %e = fusion.add %xs, %x : tensor<4xf32>
    fusion.yield %e : tensor<4xf32>
  }
  func.return %s : tensor<4xf32>
}

// -----
func.func @yield_outside(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'fusion.yield' expects parent op 'fusion.segment'}}
  fusion.yield %x : tensor<4xf32>
}
