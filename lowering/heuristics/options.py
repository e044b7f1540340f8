"""The options every planning pass shares, and the pass base class that declares them.

`convert-fusion-to-sched` schedules with them; `fusion-translate-welford` and `fusion-split-k`
ask the same planner and heuristics what it would do, so they must see the same values: a
Welford translation decided for a persistent normalization kernel is wrong when the scheduler
then runs with `persistent=false`. Each of the three passes is a `SchedulingPass`, so each
takes every option, and `build_pipeline` makes them pipeline-wide: an option set on one
planning pass applies to all the planning passes of that pipeline (two different values are
an error). `ScheduleOptions` is the plain value the planner, heuristics and emitters read.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from xdsl.passes import ModulePass

MATMUL_STORES = ("auto", "tma", "rows", "direct")  # (heuristics/matmul.py: store_choice)


class ScheduleOptionsError(ValueError):
    """An option value no scheduler accepts."""


@dataclass(frozen=True)
class ScheduleOptions:
    sms: int = 132
    """Streaming multiprocessors to fill (H100 and H200 have 132)."""
    block: int = 0
    """Threads per block for pointwise kernels / per row for reductions (0 = heuristic)."""
    vector: int = 0
    """Cap on elements per vector access (0 = widest 16-byte access that fits)."""
    split: int = 0
    """Force the number of chunks a reduction is split into (0 = heuristic, 1 = never split)."""
    persistent: bool = True
    """Let the normalization scheduler keep rows on chip (false: separate reduction and pointwise kernels)."""
    tile: str = ""
    """Force the matmul CTA tile, e.g. "128x256" (128x128, 128x256 or 256x128; "" = heuristic)."""
    stages: int = 0
    """Force the matmul pipeline depth in shared-memory slots (0 = as many as fit, up to 8)."""
    matmul_persistent: int = -1
    """Matmul grid: 1 = persistent (min(sms, tiles) CTAs loop over the tiles), 0 = one CTA per tile, -1 = heuristic."""
    matmul_pingpong: int = -1
    """Matmul consumers: 1 = ping-pong (alternate whole tiles, persistent grid), 0 = cooperative, -1 = heuristic."""
    matmul_cluster: int = 0
    """Matmul thread-block clusters: 2 = 2-CTA clusters along M sharing (multicasting) the B tile, 1 = off, 0 = heuristic."""
    matmul_store: str = "auto"
    """Matmul epilogue stores: "tma" = staged in shared memory and written by TMA stores, "direct" = st.global from the registers, "auto" = tma where the outputs allow it."""
    matmul_smem_reuse: int = -1
    """Matmul TMA-store staging: 1 = in the operand slots' bytes once the main loop is done (one CTA per tile only), 0 = bytes of its own, -1 = heuristic (reuse when it buys pipeline stages)."""
    matmul_epilogue_work: int = -1
    """The most work the planner gives a matmul's epilogue: two per op other than simple arithmetic, two per full-size tensor it reads, one per output beyond the first; 0 = the product alone, -1 = the default (2)."""

    def __post_init__(self):
        if self.sms < 1:
            raise ScheduleOptionsError(f"sms must be a positive integer, got {self.sms}")
        for name in ("block", "vector", "split", "stages"):
            if getattr(self, name) < 0:
                raise ScheduleOptionsError(f"{name} must be >= 0, got {getattr(self, name)}")
        if self.matmul_epilogue_work < -1:
            raise ScheduleOptionsError(f"matmul_epilogue_work must be >= 0 (or -1, the default), "
                                       f"got {self.matmul_epilogue_work}")
        # Forced values past CUDA's launch limits fail here, naming the option, not at launch.
        if self.block > 1024:
            raise ScheduleOptionsError(f"block must be at most 1024 (CUDA's limit on threads per block), got {self.block}")
        if self.split > 65535:
            raise ScheduleOptionsError(f"split must be at most 65535 (a reduction's chunks are its grid.y, which CUDA "
                                       f"limits to 65535), got {self.split}")
        if self.matmul_store not in MATMUL_STORES:
            raise ScheduleOptionsError(f"matmul_store must be one of {', '.join(MATMUL_STORES)}, "
                                       f"got '{self.matmul_store}'")


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ScheduleOptions))


@dataclass(frozen=True)
class SchedulingPass(ScheduleOptions, ModulePass):
    """A pass that plans with the schedulers: every `ScheduleOptions` field is one of its options
    (checked when the pass is made)."""

    def schedule_options(self) -> ScheduleOptions:
        """The options as the planner reads them."""
        return ScheduleOptions(**{n: getattr(self, n) for n in OPTION_NAMES})


def explicit_options(p: SchedulingPass, given: set[str] | None = None) -> dict[str, object]:
    """The schedule options `p` sets: those named in its pipeline text (`given`), or, for a pass
    object, those that differ from the defaults."""
    defaults = ScheduleOptions()
    names = [n for n in OPTION_NAMES if n in given] if given is not None else \
        [n for n in OPTION_NAMES if getattr(p, n) != getattr(defaults, n)]
    return {n: getattr(p, n) for n in names}


# ------------------------------------------------------------------ the plan in the IR

PLAN_ATTR = "fuser.plan"
"""The attribute on a `fusion.segment` holding the schedule options its kernels are made with."""

PLAN_OPTIONS: dict[str, tuple[str, ...]] = {
    "pointwise": ("sms", "block", "vector"),
    "reduction": ("sms", "block", "vector", "split"),
    # A normalization segment turned non-persistent becomes reduction and pointwise kernels.
    "normalization": ("sms", "block", "vector", "split", "persistent"),
    "scan": ("sms", "block", "vector"),
    "sort": ("sms", "block"),
    "scatter": ("sms", "block"),
    "matmul": ("sms", "tile", "stages", "matmul_persistent", "matmul_pingpong", "matmul_cluster", "matmul_store",
               "matmul_smem_reuse"),
}
"""The options each scheduler reads: what fusion-segment writes into a segment's plan."""


def plan_attribute(scheduler: str, opts: ScheduleOptions):
    """The typed `fuser.plan` dictionary of a segment for `scheduler` under `opts`."""
    from xdsl.dialects.builtin import BoolAttr, DictionaryAttr, IntegerAttr, StringAttr, i64

    def typed(value):
        if isinstance(value, bool):
            return BoolAttr.from_bool(value)
        return IntegerAttr(value, i64) if isinstance(value, int) else StringAttr(value)

    return DictionaryAttr({name: typed(getattr(opts, name)) for name in PLAN_OPTIONS.get(scheduler, ())})


def options_from_plan(plan, opts: ScheduleOptions) -> ScheduleOptions:
    """`opts` with the entries of a segment's `fuser.plan` (`plan`, a DictionaryAttr or None)
    in place of theirs. A plan entry that is not an option, or has the wrong type, is an error
    naming it."""
    from xdsl.dialects.builtin import IntegerAttr, StringAttr

    def width(a) -> int | None:  # 1 for a bool (`true`), None for an index
        return a.type.width.data if isinstance(a, IntegerAttr) and hasattr(a.type, "width") else None

    values: dict[str, object] = {}
    fields = {f.name: f for f in dataclasses.fields(ScheduleOptions)}
    for name, attr in (plan.data.items() if plan is not None else ()):
        f = fields.get(name)
        if f is None:
            raise ScheduleOptionsError(f"{PLAN_ATTR} entry '{name}' is not a schedule option "
                                       f"(known: {', '.join(OPTION_NAMES)})")
        want = f.type if isinstance(f.type, str) else f.type.__name__
        if want == "bool" and width(attr) == 1:
            values[name] = bool(attr.value.data)
        elif want == "int" and isinstance(attr, IntegerAttr) and width(attr) != 1:
            values[name] = attr.value.data
        elif want == "str" and isinstance(attr, StringAttr):
            values[name] = attr.data
        else:
            raise ScheduleOptionsError(f"{PLAN_ATTR} entry '{name}' must be {_TYPE_OF_FIELD[want]}, got {attr}")
    return dataclasses.replace(opts, **values)


_TYPE_OF_FIELD = {"bool": "true or false", "int": "an i64 integer", "str": "a string"}
