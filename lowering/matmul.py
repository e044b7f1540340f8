"""The Hopper matmul scheduler: TMA loads, an mbarrier pipeline, wgmma, fused epilogues.

Called by convert-fusion-to-sched for each `fusion.matmul` task; `task.outputs` lists the matmul
result (if it is materialized) and the pointwise epilogue outputs of its shape.
"""

from __future__ import annotations

from fuser.lowering.fusion_to_sched import KernelEmitter, ScheduleError, Task


def emit_matmul(em: KernelEmitter, task: Task, materialized: set, args: set) -> None:
    raise ScheduleError("'fusion.matmul' is not supported yet: the Hopper matmul scheduler is being built", task.op)
