"""Attributes of the lowered host IR that the runtime reads (plain names: no xDSL needed).

- `fuser.kept_zero` on a `gpu.alloc`: the executor zeroes the workspace once, when it allocates
  it, and its kernels leave it zero again (`sched.workspace kept_zero`).
- `fuser.coresident` on a `sched.kernel` and on the `gpu.launch_func` of it: its CTAs wait on one
  another, so the whole grid must be resident at once; the executor checks that it fits.
"""

KEPT_ZERO_ATTR = "fuser.kept_zero"
CORESIDENT_ATTR = "fuser.coresident"
