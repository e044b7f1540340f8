"""fuser-opt: parse MLIR, run a pass pipeline, print MLIR, LLVM IR or PTX.

    fuser-opt input.mlir -p default -t ptx
    fuser-opt input.mlir -p 'canonicalize,convert-fusion-to-sched{block=128}' --print-ir-after-all
    fuser-opt invalid.mlir --split-input-file --verify-diagnostics

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
import dataclasses
import importlib.metadata
import io
import sys

from fuser.dialects.ir import FuserDiagnostic, decode_source, parse_module, print_module
from fuser.passes.pipeline import NAMED_PIPELINES, PipelineError, build_pipeline, run_passes
from fuser.passes.registry import available_passes

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


def _version() -> str:
    try:
        return importlib.metadata.version("fuser")
    except importlib.metadata.PackageNotFoundError:
        return "unknown (not installed)"


def make_arg_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="fuser-opt",
        description="Run fuser passes over MLIR and print MLIR, LLVM IR or PTX.",
        epilog=describe_passes(),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("input_file", nargs="?", help="input .mlir file ('-' or none: stdin)")
    p.add_argument("-o", "--output-file", help="write the output here instead of stdout")
    p.add_argument("-p", "--passes", "--pipeline", dest="passes", default="",
                   help="pass pipeline, e.g. 'canonicalize,convert-fusion-to-sched{block=128}' or a named "
                        f"pipeline ({', '.join(NAMED_PIPELINES)})")
    p.add_argument("-t", "--target", choices=TARGETS, default="mlir", help="what to print (default: mlir)")
    p.add_argument("--arch", choices=ARCHES, default="sm_90a", help="GPU target for -t llvm/ptx (default: sm_90a)")
    p.add_argument("--split-input-file", action="store_true", help="process each '// -----' chunk separately")
    p.add_argument("--verify-diagnostics", action="store_true",
                   help="print diagnostics to stdout and exit 0 (for verifier tests)")
    p.add_argument("--print-ir-after-all", "--print-between-passes", dest="print_after_all", action="store_true",
                   help="print the IR after every pass (to stderr)")
    p.add_argument("--print-op-generic", action="store_true", help="print ops in the generic form")
    p.add_argument("--print-debuginfo", action="store_true", help="print op locations")
    p.add_argument("--list-passes", action="store_true", help="list passes, their options and named pipelines")
    p.add_argument("--version", action="store_true", help="print fuser's version and exit")
    return p


def _emit(module, args) -> str:
    if args.target == "mlir":
        return print_module(module, generic=args.print_op_generic, debuginfo=args.print_debuginfo)
    from fuser.lowering import ptx as ptx_mod
    if not _has_kernels(module):
        raise FuserDiagnostic(f"error: -t {args.target} needs nvvm-level IR (a gpu.module with kernels); "
                              "run the lowering first, e.g. -p default")
    if args.target == "llvm":
        return ptx_mod.module_to_llvm_ir(module, args.arch)
    return ptx_mod.module_to_ptx(module, args.arch)


def _has_kernels(module) -> bool:
    return any(op.name == "gpu.module" for op in module.walk())


def process_chunk(text: str, name: str, line_offset: int, args, out) -> None:
    module = parse_module(text, name, line_offset)
    passes = build_pipeline(args.passes)

    def dump(p, m) -> None:
        if args.print_after_all:
            sys.stderr.write(f"// -----// IR Dump After {p.name} //----- //\n{print_module(m)}\n")

    try:
        run_passes(passes, module, after=dump)
    except FuserDiagnostic as e:
        text = str(e)
        raise FuserDiagnostic(f"{name}: {text}" if text.startswith("error:") else text) from None  # name the file
    out.write(_emit(module, args))


def main(argv: list[str] | None = None) -> int:
    args = make_arg_parser().parse_args(argv)
    if args.version:
        print(f"fuser-opt {_version()}")
        return 0
    if args.list_passes:
        print(describe_passes())
        return 0
    try:
        build_pipeline(args.passes)  # fail early on an unknown pass or option
    except PipelineError as e:
        print(f"fuser-opt: error: {e}", file=sys.stderr)
        return 2
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
        try:
            process_chunk(chunk, name, offset, args, out)
        except FuserDiagnostic as e:
            if args.verify_diagnostics:
                out.write(f"{e}\n")
            else:
                print(e, file=sys.stderr)
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
