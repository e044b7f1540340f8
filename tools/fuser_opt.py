"""fuser-opt: parse MLIR, run a pass pipeline, print MLIR, LLVM IR or PTX.

    fuser-opt input.mlir -p default -t ptx
    fuser-opt input.mlir -p 'canonicalize,fusion-segment,convert-fusion-to-sched{block=128}' --print-ir-after-all
    fuser-opt invalid.mlir --split-input-file --verify-diagnostics
    fuser-opt input.mlir -p default -t ptx --time-passes

Why not xDSL's `xDSLOptMain` (checked against xdsl 0.74): its `run` re-raises a parse or
verifier error as a Python exception unless a diagnostics flag is given, where fuser-opt must
print an MLIR-style `file:line:col: error:` and exit non-zero; its `PassPipeline.parse_spec`
knows no named pipelines (`-p default`) and no pipeline-wide schedule options
(`build_pipeline`); and the `-t llvm|ptx` targets need `--arch`. fuser-opt uses the same pieces
underneath: xDSL's parser and printer, its pipeline syntax (`parse_pipeline`) and its passes'
`from_pass_spec`.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import functools
import io
import os
import re
import sys
import time

from fuser.passes.named import NAMED_PIPELINES


def _load_compiler() -> None:
    """The compiler (xDSL, every dialect, the pass machinery), loaded once the arguments are
    parsed: `--help` and `--version` answer without it."""
    global FuserDiagnostic, decode_source, parse_module, print_module, verify_module
    global PipelineError, build_pipeline, run_passes, passes_for_arch
    from fuser.dialects.ir import FuserDiagnostic, decode_source, parse_module, print_module, verify_module
    from fuser.lowering.target.llvmir.arch import passes_for_arch
    from fuser.passes.pipeline import PipelineError, build_pipeline, run_passes


def warm_up() -> None:
    """Import what a run imports lazily (every pass, the lowering, the LLVM IR and PTX targets)
    and initialize LLVM: for a process that forks fuser-opt runs (tools/opt_server.py)."""
    import importlib

    from fuser.lowering.target.ptx import _init_llvm
    from fuser.passes.registry import get_pass_class, pass_names
    for name in pass_names():
        get_pass_class(name)
    importlib.import_module("fuser.lowering.target.llvmir.module")
    _init_llvm()
    _arg_parser()  # (built once here, so that no forked run builds its own)
    from fuser.dialects.context import make_context
    make_context()  # (the same for the context every copy is made from)


TARGETS = ("mlir", "llvm", "ptx")
ARCHES = ("sm_90a", "sm_90", "sm_80")


def _option_text(value) -> str:
    """An option's default as the pipeline syntax writes it (bools lowercase, strings quoted when
    they are empty or hold a space)."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str) and (not value or " " in value):
        return f'"{value}"'
    return str(value)


def pass_spec(cls) -> str:
    """`name{opt=default opt=default}`: a pipeline element that parses as written."""
    opts = []
    if dataclasses.is_dataclass(cls):
        for f in dataclasses.fields(cls):
            if f.default is not dataclasses.MISSING:
                opts.append(f"{f.name}={_option_text(f.default)}")
    return cls.name + ("{" + " ".join(opts) + "}" if opts else "")


def describe_passes() -> str:
    from fuser.passes.registry import available_passes

    lines = ["passes (options in braces, separated by spaces, with their defaults):"]
    for name, load in sorted(available_passes().items()):
        cls = load()
        lines.append(f"  {pass_spec(cls)}")
        doc = " ".join((cls.__doc__ or "").strip().split("\n\n")[0].split())
        if doc:
            lines.append(f"      {doc}")
    lines.append("named pipelines:")
    for name, text in NAMED_PIPELINES.items():
        lines.append(f"  {name} = {text}")
    return "\n".join(lines)


def _pass_summary() -> str:
    """The --help epilog: pass names and named pipelines, without loading any pass (the options
    and descriptions are --list-passes')."""
    from fuser.passes.registry import pass_names

    lines = ["passes (fuser-opt --list-passes gives their options and what they do):"]
    lines += [f"  {name}" for name in sorted(pass_names())]
    lines.append("named pipelines:")
    lines += [f"  {name} = {text}" for name, text in NAMED_PIPELINES.items()]
    return "\n".join(lines)


def _version() -> str:
    import importlib.metadata  # (on use: it costs every fuser-opt run ~25 ms to import)

    try:
        return importlib.metadata.version("fuser")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def _flag(text: str) -> bool:
    """mlir-opt's boolean flag values (`--verify-each=false`)."""
    value = {"true": True, "1": True, "false": False, "0": False}.get(text.lower())
    if value is None:
        raise argparse.ArgumentTypeError(f"expected true or false, got '{text}'")
    return value


def make_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fuser-opt",
        description="Run fuser passes over MLIR and print MLIR, LLVM IR or PTX.",
        epilog=_pass_summary(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input_file", nargs="?", help="input .mlir file ('-' or none: stdin)")
    p.add_argument("-o", "--output-file", help="write the output here instead of stdout")
    p.add_argument("-p", "--passes", "--pipeline", "--pass-pipeline", dest="passes", default="",
                   help="pass pipeline, e.g. 'canonicalize,fusion-segment,convert-fusion-to-sched{block=128}' or a named "
                        f"pipeline ({', '.join(NAMED_PIPELINES)}); upstream's 'builtin.module(...)' wrapper "
                        "is taken too")
    p.add_argument("-t", "--target", choices=TARGETS, default="mlir", help="what to print (default: mlir)")
    p.add_argument("--arch", choices=ARCHES, default="sm_90a",
                   help="GPU target (default: sm_90a): -t llvm/ptx translate for it, refusing a kernel that needs "
                        "an instruction it lacks, and the pipeline leaves out the passes that would use one only "
                        "to run faster (sched-dependent-launch below sm_90)")
    p.add_argument("--split-input-file", action="store_true", help="process each '// -----' chunk separately")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="check diagnostics against '// expected-error {{message}}' annotations (also "
                        "expected-warning, expected-note; '@+N', '@-N', '@above', '@below' or '@unknown' "
                        "for another line): each must be produced and every produced error expected, else "
                        "exit 1. Input (or a --split-input-file chunk) without annotations: print its "
                        "diagnostics to stdout and exit 0 (for FileCheck-based verifier tests)")
    p.add_argument("--time-passes", "--mlir-timing", dest="time_passes", action="store_true",
                   help="at the end, print to stderr a table of the wall time of parsing, of each pass (in "
                        "pipeline order), of verification and of printing (or translating, for -t llvm/ptx)")
    p.add_argument("--print-ir-after-all", "--mlir-print-ir-after-all", "--print-between-passes", dest="print_after_all", action="store_true",
                   help="print the IR after every pass (to stderr)")
    p.add_argument("--print-op-generic", "--mlir-print-op-generic", dest="print_op_generic", action="store_true",
                   help="print ops in the generic form")
    p.add_argument("--print-debuginfo", "--mlir-print-debuginfo", dest="print_debuginfo", action="store_true",
                   help="print op locations")
    p.add_argument("--verify-each", type=_flag, default=True, metavar="{true,false}",
                   help="verify the IR after every pass (default true, naming the pass that broke it); false: "
                        "once, after the last pass")
    p.add_argument("--list-passes", action="store_true", help="list passes, their options and named pipelines")
    p.add_argument("--version", action="store_true", help="print fuser's version and exit")
    return p


def _emit(module, args) -> str:
    if args.target == "mlir":
        return print_module(module, generic=args.print_op_generic, debuginfo=args.print_debuginfo)
    from fuser.lowering.target import ptx as ptx_mod
    if not _has_kernels(module) and (host := _kernelless_host(module)) is not None:
        comment = "//" if args.target == "ptx" else ";"
        return f"{comment} @{host} launches no kernel (nothing to compute): no {args.target.upper()} to emit\n"
    if not _has_kernels(module):
        raise FuserDiagnostic(f"error: -t {args.target} needs nvvm-level IR (a gpu.module with kernels); "
                              "run the lowering first, e.g. -p default")
    from fuser.lowering.target.llvmir import TranslationError
    try:
        if args.target == "llvm":
            return ptx_mod.module_to_llvm_ir(module, args.arch)
        return ptx_mod.module_to_ptx(module, args.arch)
    except (TranslationError, ptx_mod.PtxError, ptx_mod.UnsupportedArchError) as e:  # a diagnostic, not a traceback
        lines = str(e).strip().splitlines() or [type(e).__name__]
        raise FuserDiagnostic("\n".join([f"error: -t {args.target}: {lines[0]}", *lines[1:]])) from None


def _has_kernels(module) -> bool:
    return any(op.name == "gpu.module" for op in module.walk())


def _kernelless_host(module) -> str | None:
    """The name of a lowered host function that launches nothing (its outputs are inputs
    returned into themselves, or have no elements), when that is all the module holds."""
    ops = list(module.walk())
    hosts = [op for op in ops if op.name == "func.func" and "fuser.num_outputs" in op.attributes]
    if len(hosts) != 1 or any(op.name.startswith(("fusion.", "sched.", "gpu.")) for op in ops):
        return None
    return hosts[0].sym_name.data


class PhaseTimer:
    """Wall time per phase for --time-passes, summed over --split-input-file chunks. The rows
    are fixed up front (parse, each pass in pipeline order, verify, print or translate), so a
    pass that runs twice, like `cse` in `-p default`, keeps one row per place in the pipeline."""

    def __init__(self, labels: dict) -> None:
        self.labels = labels  # row key -> printed name, in report order
        self.seconds = dict.fromkeys(labels, 0.0)
        self.start = time.perf_counter()
        self.pass_end = self.start  # when the last pass returned (see process_chunk's `after`)

    @contextlib.contextmanager
    def phase(self, key):
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[key] += time.perf_counter() - t0

    def report(self) -> str:
        """mlir-opt's table. Total runs from the start of main (Python's own start-up and the
        imports before it are not counted); `rest` is what no row covers (reading the input,
        loading the dialects, writing the output)."""
        total = time.perf_counter() - self.start
        rows = [(self.labels[k], s) for k, s in self.seconds.items()]
        rows += [("rest", max(total - sum(self.seconds.values()), 0.0)), ("Total", total)]
        bar = "===" + "-" * 73 + "==="
        lines = [bar, "... Execution time report ...".center(len(bar)).rstrip(), bar,
                 f"  Total Execution Time: {total:.4f} seconds", "", "  ----Wall Time----  ----Name----"]
        for label, s in rows:
            lines.append(f"  {s:8.4f} ({100 * s / total if total else 0.0:5.1f}%)  {label}")
        return "\n".join(lines) + "\n"


class _TimedPass:
    """Stands in for a pass in `run_passes` to time the pass alone: run_passes verifies the
    module after each pass, and that time goes to the `verify` row instead (see process_chunk)."""

    def __init__(self, inner, timer: PhaseTimer, key) -> None:
        self.inner, self.timer, self.key = inner, timer, key
        self.name = inner.name  # run_passes names the pass in its errors

    def apply(self, ctx, module) -> None:
        t0 = time.perf_counter()
        try:
            self.inner.apply(ctx, module)
        finally:
            self.timer.pass_end = time.perf_counter()
            self.timer.seconds[self.key] += self.timer.pass_end - t0


def _phase(timer: PhaseTimer | None, key):
    return timer.phase(key) if timer else contextlib.nullcontext()


def process_chunk(text: str, name: str, line_offset: int, args, out, timer: PhaseTimer | None = None) -> None:
    with _phase(timer, "parse"):
        module = parse_module(text, name, line_offset, verify=False)
    with _phase(timer, "verify"):  # what parse_module's own verify does, timed apart from parsing
        verify_module(module)
    passes = passes_for_arch(build_pipeline(args.passes), args.arch)
    if timer:
        passes = [_TimedPass(p, timer, ("pass", i)) for i, p in enumerate(passes)]

    def after(p, m) -> None:
        if timer:  # run_passes has verified the module since the pass returned
            timer.seconds["verify"] += time.perf_counter() - timer.pass_end
        if args.print_after_all:
            sys.stderr.write(f"// -----// IR Dump After {p.name} //----- //\n{print_module(m)}\n")
        if timer:
            timer.pass_end = time.perf_counter()

    try:
        run_passes(passes, module, after=after, verify_each=args.verify_each)
    except FuserDiagnostic as e:
        text = str(e)
        raise FuserDiagnostic(f"{name}: {text}" if text.startswith("error:") else text) from None  # name the file
    if timer and passes and not args.verify_each:  # run_passes verified once, after the last `after`
        timer.seconds["verify"] += time.perf_counter() - timer.pass_end
    with _phase(timer, "emit"):
        try:
            out.write(_emit(module, args))
        except FuserDiagnostic as e:
            text = str(e)
            raise FuserDiagnostic(f"{name}: {text}" if text.startswith("error:") else text) from None


# --verify-diagnostics with annotations, as mlir-opt reads them:
#   // expected-error {{part of the message}}        on this line
#   // expected-error@+1 {{...}}  @-2, @above, @below  another line (@above/@below: the nearest line
#                                                     without an annotation of its own; a space
#                                                     before the @, as in `expected-error @+1`, is allowed)
#   // expected-error@unknown {{...}}                 a diagnostic with no line (e.g. an unknown op)
# and expected-warning / expected-note alike. One annotation a line. A comment that names
# expected-error without `{{` after it (prose, a CHECK line) is no annotation.
_ANNOTATION = re.compile(r"//.*?\b(expected-(?:error|warning|note))(?:\s*@\S*|\S*)\s*\{\{")
_DIRECTIVE = re.compile(r"expected-(error|warning|note)(?:\s*@([+-]\d+|above|below|unknown))?\s*\{\{(.*)\}\}")
# A diagnostic's first line: `file:line:col: error: message`, `file: error: message` or `error: message`.
_DIAGNOSTIC = re.compile(r"(?:(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): |(?P<ufile>.*?): )?"
                         r"(?P<severity>error|warning|note|remark): (?P<message>.*)")


@dataclasses.dataclass
class Expected:
    severity: str
    message: str  # a substring of the diagnostic's message
    line: int | None  # the file line the diagnostic must be on; None: @unknown
    where: str  # the annotation's own file:line:col, to point at when it is not produced
    seen: bool = False


def parse_expectations(text: str, name: str, line_offset: int) -> tuple[list[Expected], list[str]]:
    """The annotations of one input chunk, with file line numbers, and complaints about
    annotations that do not parse. Both empty: the chunk has none (the old behaviour)."""
    lines = text.split("\n")
    found = [_ANNOTATION.search(line) for line in lines]
    expected, complaints = [], []
    for i, m in enumerate(found):
        if m is None:
            continue
        where = f"{name}:{i + 1 + line_offset}:{m.start(1) + 1}"
        d = _DIRECTIVE.match(lines[i], m.start(1))
        if d is None:
            complaints.append(f"{where}: error: malformed {m.group(1)} annotation; expected "
                              f"'{m.group(1)}[@+N|@-N|@above|@below|@unknown] {{{{message}}}}'")
            continue
        severity, at, message = d.groups()
        if at is None or at[0] in "+-":
            target = i + int(at or 0)
        elif at == "unknown":
            target = None
        else:  # the nearest line above or below that is not an annotation itself
            step = -1 if at == "above" else 1
            target = next((j for j in range(i + step, -1 if step < 0 else len(lines), step) if found[j] is None), -1)
            if target == -1:
                complaints.append(f"{where}: error: no line {at} for '@{at}' to refer to")
                continue
        line = None if target is None else target + 1 + line_offset
        expected.append(Expected(severity, message, line, where))
    return expected, complaints


def check_expectations(expected: list[Expected], produced: list[str], name: str) -> list[str]:
    """Match produced diagnostics to the annotations (same severity and line, the annotation's
    text inside the message); mlir-opt's complaints for what is left on either side."""
    complaints = []
    for text in produced:
        first = text.splitlines()[0] if text else ""
        m = _DIAGNOSTIC.fullmatch(first)
        if m is None:  # not in the usual form: take it as an error with no line
            severity, message, line, where = "error", first, None, name
        else:
            severity, message = m["severity"], m["message"]
            line = int(m["line"]) if m["line"] else None
            where = f"{m['file']}:{m['line']}:{m['col']}" if m["line"] else (m["ufile"] or name)
        hit = next((x for x in expected
                    if not x.seen and x.severity == severity and x.line == line and x.message in message), None)
        if hit:
            hit.seen = True
        else:
            complaints.append(f"{where}: error: unexpected {severity}: {message}")
    for x in expected:
        if not x.seen:
            complaints.append(f'{x.where}: error: expected {x.severity} "{x.message}" was not produced')
    return complaints


def main(argv: list[str] | None = None) -> int:
    """fuser-opt. A command-line call (`argv` None) runs in the warm server that
    FUSER_OPT_SERVER names, if there is one; a call from Python with its own `argv` always runs
    here, so that what it redirects (sys.stdout, sys.stderr) gets the output."""
    status = None
    if argv is None:
        from fuser.tools.opt_client import forward
        status = forward()
    return run_here(argv) if status is None else status


def run_here(argv: list[str] | None = None) -> int:
    """fuser-opt in this process."""
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader went away (`| head`): not an error, and no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # Python flushes stdout at exit
        return 0


@functools.cache
def _arg_parser() -> argparse.ArgumentParser:
    """One parser per process (parsing does not change it): building it took ~1 ms of every
    call of main(), which the warm server's runs and the tests' repeated calls paid each time."""
    return make_arg_parser()


def _main(argv: list[str] | None) -> int:
    args = _arg_parser().parse_args(argv)
    if args.version:
        print(f"fuser-opt {_version()}")
        return 0
    _load_compiler()
    if args.list_passes:
        print(describe_passes())
        return 0
    try:
        pipeline = passes_for_arch(build_pipeline(args.passes), args.arch)  # fail early on an unknown pass or option
    except PipelineError as e:
        print(f"fuser-opt: error: {e}", file=sys.stderr)
        return 2
    timer = None
    if args.time_passes:
        emit = "print" if args.target == "mlir" else f"translate to {args.target}"
        timer = PhaseTimer({"parse": "parse", **{("pass", i): p.name for i, p in enumerate(pipeline)},
                            "verify": "verify", "emit": emit})
    status = _run(args, timer)
    if timer:
        sys.stderr.write(timer.report())
    return status


def _run(args, timer: PhaseTimer | None) -> int:
    if args.input_file == "-":  # MLIR tools read standard input for '-'
        args.input_file = None
    name = args.input_file or "<stdin>"
    try:
        if args.input_file:
            with open(args.input_file, "rb") as f:
                data = f.read()
        else:
            data = sys.stdin.buffer.read()
        text = decode_source(data, name)
    except OSError as e:
        print(f"fuser-opt: error: cannot read {name}: {e.strerror}", file=sys.stderr)
        return 2
    except FuserDiagnostic as e:
        print(e, file=sys.stderr)
        return 1
    chunks = [(text, 0)]
    if args.split_input_file:
        chunks, offset = [], 0
        for piece in text.split("// -----"):
            chunks.append((piece, offset))
            offset += piece.count("\n")
    # The output is collected first and written only at the end, so a failed run leaves an
    # existing -o file as it was instead of truncating it.
    out = io.StringIO()
    status = 0
    for i, (chunk, offset) in enumerate(chunks):
        if i:
            out.write("// -----\n")
        expected, complaints = parse_expectations(chunk, name, offset) if args.verify_diagnostics else ([], [])
        produced = []
        try:
            process_chunk(chunk, name, offset, args, out, timer)
        except FuserDiagnostic as e:
            produced.append(str(e))
        if expected or complaints:
            # An annotated chunk: its diagnostics are checked, not printed (mlir-opt's way).
            complaints += check_expectations(expected, produced, name)
            for c in complaints:
                print(c, file=sys.stderr)
            if complaints:
                status = 1
        elif produced and args.verify_diagnostics:
            # No annotations: print the diagnostics for FileCheck, as before annotations were read.
            out.write(f"{produced[0]}\n")
        elif produced:
            print(produced[0], file=sys.stderr)
            status = 1
    if not args.output_file:
        sys.stdout.write(out.getvalue())
    elif status == 0 or args.verify_diagnostics:
        try:
            with open(args.output_file, "w") as f:
                f.write(out.getvalue())
        except OSError as e:
            print(f"fuser-opt: error: cannot write {args.output_file}: {e.strerror}", file=sys.stderr)
            return 2
    return status


if __name__ == "__main__":
    sys.exit(main())
