"""The schedulers' kernel emitters: each builds the `sched.kernel`s of one kind of task
(pointwise, transpose, reduction, normalization, matmul) from a plan, with the kernel builder
and the evaluator that recomputes fused pointwise ops inside a kernel."""
