"""Pipeline syntax and the named pipelines.

A pipeline is text, `"pass-a,pass-b{opt=1,other=x}"`, or a list of pass objects. A name from
`NAMED_PIPELINES` stands for its pass list, so `fuser-opt -p default` runs the whole flow.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import parse_pipeline
from xdsl.utils.exceptions import ArgSpecParseError

from fuser.lowering.heuristics.options import SchedulingPass, explicit_options
from fuser.passes.named import NAMED_PIPELINES
from fuser.passes.registry import available_passes



class PipelineError(ValueError):
    """An unknown pass, an unknown option or a malformed pipeline string."""


def strip_anchor(spec: str) -> str:
    """Upstream mlir-opt's spelling, `builtin.module(pass-a,pass-b)`, as our plain list: every
    fuser pass runs on the whole module, so the module anchor is the only one there is."""
    text = spec.strip()
    for anchor in ("builtin.module(", "any("):
        if text.startswith(anchor):
            if not text.endswith(")"):
                raise PipelineError(f"malformed pipeline '{spec}': '{anchor}' is not closed")
            return strip_anchor(text[len(anchor):-1])
    if "(" in text and "{" not in text.split("(", 1)[0]:
        anchor = text.split("(", 1)[0].split(",")[-1].strip()
        raise PipelineError(f"pipeline '{spec}' nests passes under '{anchor}(...)': fuser's passes run on the "
                            "whole module, so only a 'builtin.module(...)' anchor around the whole list is taken")
    return text


def expand(spec: str) -> str:
    """Replace named pipelines inside a pipeline string by their pass lists. A named pipeline
    may take schedule options, `default{matmul_smem_reuse=0}`: they go to its
    convert-fusion-to-sched, and so (being pipeline-wide) to all its planning passes."""
    parts = []
    for item in _split_top_level(spec):
        item = item.strip()
        name, brace, opts = item.partition("{")
        if brace and name.strip() in NAMED_PIPELINES and item.endswith("}"):
            planner = "convert-fusion-to-sched"
            parts.append(NAMED_PIPELINES[name.strip()].replace(planner, f"{planner}{{{opts[:-1]}}}", 1))
        else:
            parts.append(NAMED_PIPELINES.get(item, item))
    return ",".join(p for p in parts if p)


def with_split_k(pipeline: str, options: str) -> str:
    """`pipeline` with `options` given to its fusion-split-k (unchanged when there are none)."""
    if not options:
        return pipeline
    passes = _split_top_level(expand(pipeline))
    out, done = [], False
    for p in passes:
        if not done and p.strip().startswith("fusion-split-k"):
            name, _, rest = p.strip().partition("{")
            p = f"{name}{{{options} {rest[:-1]}}}" if rest else f"{name}{{{options}}}"
            done = True
        out.append(p)
    if not done:
        raise ValueError(f"pipeline {pipeline!r} has no fusion-split-k to give {options!r}")
    return ",".join(out)


def _split_top_level(spec: str) -> list[str]:
    out, depth, cur = [], 0, ""
    for ch in spec:
        if ch == "{":
            depth += 1
        elif ch == "}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur)
            cur = ""
        else:
            cur += ch
    out.append(cur)
    return out


def build_pipeline(spec: str | Sequence[ModulePass]) -> list[ModulePass]:
    """Turn pipeline text (or a list of passes) into pass objects, with clear errors.

    Schedule options are pipeline-wide: one set on any planning pass (`fusion-translate-welford`,
    `fusion-split-k`, `convert-fusion-to-sched`) applies to every planning pass of the pipeline,
    so a decision taken early is taken with the options the scheduler will use."""
    if not isinstance(spec, str):
        passes = list(spec)
        for p in passes:
            if not isinstance(p, ModulePass):
                raise PipelineError(f"pipeline entries must be passes, got {type(p).__name__}")
        return _share_schedule_options(passes, [None] * len(passes))
    text = expand(strip_anchor(spec))
    if not text.strip():
        return []
    known = available_passes()
    try:
        specs = list(parse_pipeline(text))
    except (Exception, ArgSpecParseError) as e:  # xDSL's parse error is a BaseException
        raise PipelineError(f"malformed pipeline '{spec}': {e}") from None
    passes = []
    for s in specs:
        if s.name not in known:
            raise PipelineError(f"unknown pass '{s.name}'; available passes: {', '.join(sorted(known))}; "
                                f"named pipelines: {', '.join(NAMED_PIPELINES)}")
        cls = known[s.name]()
        _check_option_types(s, cls)
        try:
            passes.append(cls.from_pass_spec(s))
        except Exception as e:
            raise PipelineError(f"bad options for pass '{s.name}': {e}") from None
    return _share_schedule_options(passes, [set(s.parameters) for s in specs])


_TYPE_WORDS = {"int": ("an integer", int), "bool": ("true or false", bool), "str": ("a string", str)}


def _check_option_types(spec, cls) -> None:
    """Name the option and the value when a value has the wrong type (xDSL says only
    "Incompatible types: given ('x',), expected <class 'int'>")."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name, values in spec.parameters.items():
        f = fields.get(name)
        want = _TYPE_WORDS.get(f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")) if f else None
        if want is None or len(values) != 1:
            continue
        value = values[0]
        ok = isinstance(value, want[1]) and (want[1] is bool or not isinstance(value, bool))
        if not ok:
            raise PipelineError(f"bad options for pass '{spec.name}': option '{name}' takes {want[0]}, "
                                f"got {value!r}")


def _share_schedule_options(passes: list[ModulePass], given: list[set[str] | None]) -> list[ModulePass]:
    """Give every planning pass the schedule options any of them sets (see build_pipeline)."""
    shared: dict[str, tuple[object, str]] = {}  # option -> (value, the pass that set it)
    for p, g in zip(passes, given):
        if not isinstance(p, SchedulingPass):
            continue
        for name, value in explicit_options(p, g).items():
            if name in shared and shared[name][0] != value:
                raise PipelineError(f"schedule option '{name}' is {shared[name][0]!r} for pass '{shared[name][1]}' "
                                    f"but {value!r} for pass '{p.name}'; schedule options are pipeline-wide")
            shared[name] = (value, p.name)
    if not shared:
        return passes
    values = {k: v for k, (v, _) in shared.items()}
    return [dataclasses.replace(p, **values) if isinstance(p, SchedulingPass) else p for p in passes]


def with_schedule_options(passes: list[ModulePass], options: dict | None) -> list[ModulePass]:
    """`passes` with schedule `options` ({"block": 128, "persistent": False}) given to every
    planning pass, as if written in the pipeline text (a value the text sets differently is an
    error, as between two passes)."""
    if not options:
        return passes
    from fuser.lowering.heuristics.options import OPTION_NAMES, ScheduleOptions, ScheduleOptionsError

    unknown = sorted(set(options) - set(OPTION_NAMES))
    if unknown:
        raise PipelineError(f"unknown schedule option(s) {', '.join(map(repr, unknown))}; "
                            f"known: {', '.join(OPTION_NAMES)}")
    try:
        ScheduleOptions(**options)
    except (ScheduleOptionsError, TypeError) as e:
        raise PipelineError(f"bad schedule options {options}: {e}") from None
    if not any(isinstance(p, SchedulingPass) for p in passes):
        raise PipelineError("schedule options given, but the pipeline has no planning pass to take them")
    for p in passes:
        if not isinstance(p, SchedulingPass):
            continue
        for name, value in explicit_options(p).items():
            if name in options and options[name] != value:
                raise PipelineError(f"schedule option '{name}' is {value!r} in the pipeline (pass '{p.name}') but "
                                    f"{options[name]!r} in options")
    return [dataclasses.replace(p, **options) if isinstance(p, SchedulingPass) else p for p in passes]


def pipeline_text(passes: Sequence[ModulePass]) -> str:
    """The canonical text of a pass list (used in cache keys and printed by tools)."""
    return ",".join(str(p.pipeline_pass_spec(include_default=True)) for p in passes)


def run_passes(passes: Sequence[ModulePass], module, after=None, verify_each: bool = True,
               verify_end: bool = True) -> None:
    """Apply passes in order; `after(pass, module)` runs after each one. With `verify_each` the
    module is verified after every pass (fuser-opt's behaviour, which names the pass that broke
    it); without, once at the end, unless not `verify_end` (the compile driver's default:
    verification is most of a compile's time, and LLVM verifies the IR it is given).

    A pass that raises on valid input is reported as a diagnostic naming the pass, never as
    a traceback: that is either an unsupported case (the message says which) or a compiler bug.
    """
    # loaded on use: they load every dialect, which `fuser-opt --help` does not need
    from fuser.dialects.context import make_context
    from fuser.dialects.ir import FuserDiagnostic, first_line, location_of, verify_module

    if passes:
        _refuse_declarations(module)
    ctx = make_context()
    for p in passes:
        try:
            p.apply(ctx, module)
        except FuserDiagnostic:
            raise
        except Exception as e:
            op = getattr(e, "op", None)  # passes attach the op they could not handle
            where = f"{location_of(op)}: " if op is not None else ""
            raise FuserDiagnostic(f"{where}error: pass '{p.name}' failed: {first_line(e)}") from e
        if verify_each:
            verify_module(module)
        if after is not None:
            after(p, module)
    if not verify_each and verify_end:
        verify_module(module)


def _refuse_declarations(module) -> None:
    """A body-less func.func (a declaration) has nothing to compile, and every pass reads a
    function's body: refused at its location before any pass runs."""
    from xdsl.dialects.func import FuncOp

    from fuser.dialects.ir import FuserDiagnostic, location_of

    for fn in module.body.block.ops:
        if isinstance(fn, FuncOp) and not fn.body.blocks:
            raise FuserDiagnostic(f"{location_of(fn)}: error: function @{fn.sym_name.data} has no body; fuser "
                                  "compiles function definitions")
