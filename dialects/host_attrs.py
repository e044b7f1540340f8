"""Attributes of the lowered host IR that the runtime reads (plain names: no xDSL needed).

- `fuser.kept_zero` on a `gpu.alloc`: the executor zeroes the workspace once, when it allocates
  it, and its kernels leave it zero again (`sched.workspace kept_zero`).
- `fuser.coresident` on a `sched.kernel` and on the `gpu.launch_func` of it: its CTAs wait on one
  another, so the whole grid must be resident at once; the executor checks that it fits.
- `fuser.dependent_launch` on a `sched.launch` and on the `gpu.launch_func` it becomes: the
  kernel may be dispatched while the kernel launched before it still runs (programmatic
  dependent launch, placed by `sched-dependent-launch`); its `griddepcontrol wait` holds it
  until that kernel is done. The executor launches it with programmatic stream serialization.
"""

KEPT_ZERO_ATTR = "fuser.kept_zero"
CORESIDENT_ATTR = "fuser.coresident"
DEPENDENT_LAUNCH_ATTR = "fuser.dependent_launch"
