"""Where a cold compile's time goes, stage by stage (docs/perf-notes.md, "Compile time").

    python -m fuser.tools.bench.compile_stages 3 examples/matmul_bias_gelu.mlir examples/layer_norm.mlir

Each file is compiled REPS times by the compile driver, each time with an empty disk cache (a
fresh FUSER_CACHE_DIR; imports done once), and the best run's split is printed: IR printing,
verification, each pass, convert-nvvm-to-llvm, the LLVM IR text, llvmlite's parse / verify / O3
passes / NVPTX emission, the cache write. It times by wrapping the driver's functions, which
have the same names in earlier trees, so `PYTHONPATH=<old tree's parent> python compile_stages.py`
measures an older build the same way. CLOCK=wall times wall-clock (default: process CPU time,
steadier on a shared machine); OUT=path.json also writes the numbers."""
import os, sys, tempfile, time, json, collections
CLOCK = time.process_time if os.environ.get("CLOCK", "cpu") == "cpu" else time.perf_counter
os.environ["FUSER_CACHE_DIR"] = tempfile.mkdtemp(prefix="i33cache")
t = CLOCK()
import fuser
import fuser.driver as drv
from fuser.runtime import cache as cache_mod
import fuser.dialects.ir as irm
import fuser.passes.pipeline as pl
import fuser.lowering.target.ptx as ptx_mod
import llvmlite.binding as llvm
T_IMPORT = CLOCK() - t
acc = collections.defaultdict(float)

def timed(name, fn):
    def w(*a, **k):
        t = CLOCK()
        try:
            return fn(*a, **k)
        finally:
            acc[name] += CLOCK() - t
    return w

# printing: wherever it is called from
_pm = irm.print_module
def print_module(*a, **k):
    t = CLOCK()
    try:
        return _pm(*a, **k)
    finally:
        acc["print IR (key text + stages)"] += CLOCK() - t
drv.print_module = print_module
irm.verify_module = timed("verify", irm.verify_module)
drv.lower_nvvm_to_llvm = timed("convert-nvvm-to-llvm (driver)", drv.lower_nvvm_to_llvm)
ptx_mod.module_to_llvm_ir = timed("LLVM IR text", ptx_mod.module_to_llvm_ir)
_orig_codegen = ptx_mod._codegen
def codegen(llvm_ir, arch, opt_level):
    tm = ptx_mod._target_machine(arch, opt_level)
    t = CLOCK(); mod = llvm.parse_assembly(llvm_ir); acc["llvm parse_assembly"] += CLOCK() - t
    t = CLOCK(); mod.verify(); acc["llvm verify"] += CLOCK() - t
    mod.triple = ptx_mod.TRIPLE
    mod.data_layout = str(tm.target_data)
    t = CLOCK()
    if opt_level > 0:
        pto = llvm.create_pipeline_tuning_options(speed_level=opt_level)
        pb = llvm.create_pass_builder(tm, pto)
        pb.getModulePassManager().run(mod, pb)
    acc["llvm O3 passes"] += CLOCK() - t
    t = CLOCK(); out = tm.emit_assembly(mod); acc["llvm NVPTX emit"] += CLOCK() - t
    return out
ptx_mod._codegen = codegen
ptx_mod.llvm_ir_to_ptx = timed("llvm_ir_to_ptx total", ptx_mod.llvm_ir_to_ptx)
drv.extract_program = timed("extract_program", drv.extract_program)
_pfa = ptx_mod.passes_for_arch
def passes_for_arch(passes, arch):
    out = _pfa(passes, arch)
    for p in out:
        object.__setattr__(p, "apply", timed("pass " + p.name, p.apply))
    return out
ptx_mod.passes_for_arch = passes_for_arch
_put = cache_mod.KernelCache.put
cache_mod.KernelCache.put = timed("cache put", _put)

reps = int(sys.argv[1])
res = {}
for path in sys.argv[2:]:
    text = open(path).read()
    best = None
    for r in range(reps):
        os.environ["FUSER_CACHE_DIR"] = tempfile.mkdtemp(prefix="i33cache")
        cache_mod._default = None
        acc.clear()
        t = CLOCK()
        out = drv.compile_fusion(text)
        total = CLOCK() - t
        if best is None or total < best[0]:
            best = (total, dict(acc), len(out.program.launches))
    total, a, nk = best
    print(f"== {os.path.basename(path)}: cold compile {total*1000:.0f} ms (min of {reps}), {nk} kernel launch(es)")
    passes = sum(v for k, v in a.items() if k.startswith("pass "))
    for k, v in sorted(a.items(), key=lambda kv: -kv[1]):
        print(f"   {k:40s} {v*1000:8.1f} ms")
    print(f"   {'(passes total)':40s} {passes*1000:8.1f} ms")
    res[os.path.basename(path)] = {"total": total, **a}
print(f"import fuser + driver: {T_IMPORT*1000:.0f} ms")
if os.environ.get("OUT"):
    json.dump(res, open(os.environ["OUT"], "w"), indent=1)
