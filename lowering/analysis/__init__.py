"""What passes and conversions both ask, building no IR: the planner (kernel tasks), the
sizes and errors they share, the forward dataflow walk over sched kernels and the two analyses
built on it (unsynced bulk writes, unwaited wgmma results). The schedulers' parameter
choices are in heuristics/, what every part shares (errors, tasks, sizes) in lowering/common.py."""
