"""sched-dependent-launch: let each kernel of a multi-kernel plan start while the one before it
finishes (programmatic dependent launch, sm_90).

A fusion that takes several kernels (a split-K matmul and the sum of its partials, a reduction
split over blocks and its merge, segments) launches them one after another on one stream. Each
launch normally waits for the previous kernel to complete before its CTAs are dispatched, and
that gap (dispatch, the prologue up to the first load) is paid once per kernel boundary, a few
percent of a 40 us split-K matmul. With programmatic stream serialization the next kernel is
dispatched as soon as every CTA of the previous one has said it may be
(`griddepcontrol.launch_dependents`), and waits inside the kernel (`griddepcontrol.wait`) for
the previous kernel's completion and memory flush.

In every host function the pass marks each `sched.launch` that follows another launch with
`fuser.dependent_launch` (the executor launches it with programmatic stream serialization),
puts `sched.griddepcontrol wait` first in its kernel, and puts
`sched.griddepcontrol launch_dependents` first in the kernel of the launch before it. The wait
comes before the kernel's first instruction, so no access of the dependent kernel, to whatever
buffer, can meet an access of an earlier kernel; the trigger orders nothing, so placing it first
only lets the next grid be dispatched as soon as the last CTA of this one has started. A grid
that waits never holds back an older one (the oldest running kernel waits on nothing), so CTAs
dispatched early cannot deadlock the GPU; at worst they sit idle on free SMs until the wait
returns. A kernel launched without the attribute (the first of a plan, or launched on its own)
runs the two instructions as no-ops.

The pass is idempotent: a kernel that already starts with the op it needs is left alone.
"""

from __future__ import annotations

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, UnitAttr
from xdsl.passes import ModulePass

from fuser.dialects import sched
from fuser.dialects.host_attrs import DEPENDENT_LAUNCH_ATTR


@dataclass(frozen=True)
class DependentLaunch(ModulePass):
    """Mark launches that follow another launch as programmatic dependent launches."""

    name = "sched-dependent-launch"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        kernels = {k.sym_name.data: k for k in op.ops if isinstance(k, sched.KernelOp)}
        for fn in [o for o in op.ops if isinstance(o, func.FuncOp)]:
            launches = [o for o in fn.walk() if isinstance(o, sched.LaunchOp)]
            for before, after in zip(launches, launches[1:]):
                after.attributes[DEPENDENT_LAUNCH_ATTR] = UnitAttr()
                k_after = kernels.get(after.kernel.root_reference.data)
                k_before = kernels.get(before.kernel.root_reference.data)
                if k_after is not None:
                    _ensure_first(k_after, "wait")
                if k_before is not None:
                    _ensure_first(k_before, "launch_dependents")


def _ensure_first(kernel: sched.KernelOp, kind: str) -> None:
    """Put `sched.griddepcontrol kind` at the top of the kernel, after any griddepcontrol
    already there (the wait, when both are needed, comes first)."""
    block = kernel.body.block
    at = block.first_op
    while isinstance(at, sched.GridDepControlOp):
        if at.kind.data == kind:
            return
        at = at.next_op
    new = sched.GridDepControlOp(kind)
    if at is None:
        block.add_op(new)
    else:
        block.insert_op_before(new, at)
