"""Runtime tests that need no GPU: driver error reporting, argument handling, the
kernel cache, and reading the nvvm-level host function into a Program."""

import ctypes
import json
import struct
from types import SimpleNamespace

import numpy as np
import pytest

from fuser.runtime import arrays, cache, driver, plan
from fuser.runtime.arrays import ArgumentError, convert_arg
from fuser.runtime.executor import Executor
from fuser.runtime.plan import BufferSpec, LaunchStep, Program, ProgramError, WorkspaceSpec


# ----------------------------------------------------------------------- driver

@pytest.mark.skipif(driver.gpu_available(), reason="this machine has a GPU")
def test_no_gpu_here_is_reported_plainly():
    assert driver.gpu_available() is False
    with pytest.raises(driver.NoGPUError) as e:
        driver.require_gpu()
    msg = str(e.value)
    assert msg.startswith("no NVIDIA GPU/driver found: ")
    assert "(cuInit: " in msg
    assert "Traceback" not in msg


class _FakeDriver(SimpleNamespace):
    """Stands in for cuda.bindings.driver in the init tests."""
    CUresult = driver._cu.CUresult

    @staticmethod
    def cuGetErrorString(err):
        return (driver._cu.CUresult.CUDA_SUCCESS, b"described by the fake driver")


def test_dynamic_lib_not_found_becomes_no_gpu_error(monkeypatch):
    from cuda.pathfinder import DynamicLibNotFoundError

    def cu_init(flags):
        raise DynamicLibNotFoundError("libcuda.so.1 not found")

    monkeypatch.setattr(driver, "_state", {})
    monkeypatch.setattr(driver, "_cu", _FakeDriver(cuInit=cu_init))
    assert driver.gpu_available() is False
    with pytest.raises(driver.NoGPUError, match=r"no NVIDIA GPU/driver found: .*\(cuInit: libcuda.so.1 not found\)"):
        driver.require_gpu()


def test_cuinit_error_code_becomes_no_gpu_error(monkeypatch):
    err = driver._cu.CUresult.CUDA_ERROR_NO_DEVICE
    monkeypatch.setattr(driver, "_state", {})
    monkeypatch.setattr(driver, "_cu", _FakeDriver(cuInit=lambda flags: (err,)))
    with pytest.raises(driver.NoGPUError) as e:
        driver.require_gpu()
    assert "(cuInit: CUDA_ERROR_NO_DEVICE (100): described by the fake driver)" in str(e.value)


def test_check_returns_outputs_and_raises_named_errors(monkeypatch):
    ok = driver._cu.CUresult.CUDA_SUCCESS
    assert driver.check((ok,), "cuX") is None
    assert driver.check((ok, 7), "cuX") == 7
    assert driver.check((ok, 1, 2), "cuX") == (1, 2)
    bad = driver._cu.CUresult.CUDA_ERROR_INVALID_PTX
    with pytest.raises(driver.CudaError) as e:
        driver.check((bad, None), "cuModuleLoadData")
    assert str(e.value).startswith("cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX (218)")
    assert e.value.call == "cuModuleLoadData" and e.value.result == 218
    # with a driver present, the description from cuGetErrorString is appended
    monkeypatch.setattr(driver, "_cu", _FakeDriver())
    with pytest.raises(driver.CudaError,
                       match=r"^cuModuleLoadData failed: CUDA_ERROR_INVALID_PTX \(218\): described by the fake driver$"):
        driver.check((bad, None), "cuModuleLoadData")


def test_pack_arg_slots():
    assert driver.pack_arg(0x7F00_0000_1000) == 0x7F00_0000_1000
    assert driver.pack_arg(driver.Scalar(1.5, "f32")) == struct.unpack("<I", struct.pack("<f", 1.5))[0]
    assert driver.pack_arg((-1, "i32")) == 0xFFFFFFFF
    assert driver.pack_arg((2.0, "f16")) == 0x4000
    assert driver.pack_arg((1.0, "bf16")) == 0x3F80
    assert driver.pack_arg((1.0 + 2 ** -8, "bf16")) == 0x3F80   # ties round to even
    assert driver.pack_arg((float("nan"), "bf16")) == 0x7FC0
    assert driver.pack_arg(SimpleNamespace(ptr=0x1234)) == 0x1234
    with pytest.raises(TypeError, match="Scalar"):
        driver.pack_arg(1.5)
    with pytest.raises(TypeError, match="unknown scalar"):
        driver.pack_arg((1, "u7"))


def test_param_block_points_at_its_slots():
    pb = driver.ParamBlock(3)
    pb.values[1] = 42
    ptrs = (ctypes.c_void_p * 3).from_address(pb.address)
    assert ctypes.c_uint64.from_address(ptrs[1]).value == 42
    assert driver.ParamBlock(0).address is None


def test_empty_device_buffer_needs_no_gpu():
    b = driver.DeviceBuffer(0)
    assert b.ptr == 0 and b.size == 0
    b.free()


# ------------------------------------------------------------------------ cache

def test_cache_key_changes_with_each_component():
    base = dict(ir_text="module {}", signature=[((4, 5), "f32")], arch="sm_90a", options="p1", version="0.1")
    k0 = cache.make_key(**base)
    assert k0 == cache.make_key(**base) and len(k0) == 64
    for field, other in [("ir_text", "module { }"), ("signature", [((5, 4), "f32")]),
                         ("arch", "sm_90"), ("options", "p2"), ("version", "0.2")]:
        assert cache.make_key(**{**base, field: other}) != k0, field
    # components are length-prefixed: moving text between fields changes the key
    assert cache.make_key("ab", "c", "x", "") != cache.make_key("a", "bc", "x", "")
    assert cache.signature_string([BufferSpec("x", (4, 5), "f32"), ((), "i1")]) == "4x5xf32,i1"


def test_cache_memory_and_disk(tmp_path):
    c = cache.KernelCache(tmp_path, disk=True)
    k = cache.make_key("ir", "4xf32", "sm_90a")
    assert c.get(k) is None
    c.put(k, {"ptx": ".version 8.0\n"}, {"kernels": ["k0"]})
    assert c.get(k).payloads["ptx"] == ".version 8.0\n"
    assert c.stats["memory_hits"] == 1
    # a fresh cache (new process) finds it on disk
    c2 = cache.KernelCache(tmp_path, disk=True)
    e = c2.get(k)
    assert e.payloads == {"ptx": ".version 8.0\n"} and e.meta == {"kernels": ["k0"]}
    assert c2.stats["disk_hits"] == 1
    assert list(c2.keys_on_disk()) == [k]
    # no temporary files are left behind by the atomic writes
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_cache_env_defaults(tmp_path, monkeypatch):
    monkeypatch.setenv("FUSER_CACHE_DIR", str(tmp_path / "cdir"))
    monkeypatch.delenv("FUSER_CACHE", raising=False)
    c = cache.KernelCache()
    assert c.directory == tmp_path / "cdir" and c.disk
    monkeypatch.setenv("FUSER_CACHE", "0")
    c = cache.KernelCache()
    assert not c.disk
    c.put("ab" * 32, {"ptx": "x"})
    assert c.get("ab" * 32) is not None          # memory layer still works
    assert not (tmp_path / "cdir").exists()       # nothing written to disk
    monkeypatch.delenv("FUSER_CACHE_DIR")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert cache.KernelCache().directory == cache.Path.home() / ".cache" / "fuser"


@pytest.mark.parametrize("damage", ["truncate_meta", "garbage_meta", "payload_changed",
                                    "payload_missing", "meta_not_object", "binary_meta"])
def test_cache_corrupt_entry_is_a_miss_and_is_rewritten(tmp_path, damage):
    k = cache.make_key("ir", "", "sm_90a")
    cache.KernelCache(tmp_path).put(k, {"ptx": "PTX TEXT"}, {"a": 1})
    meta = next(tmp_path.rglob(f"{k}.json"))
    payload = next(tmp_path.rglob(f"{k}.ptx.txt"))
    if damage == "truncate_meta":
        meta.write_text(meta.read_text()[:10])
    elif damage == "garbage_meta":
        meta.write_text("{not json")
    elif damage == "payload_changed":
        payload.write_text("PTX TEXT, edited")
    elif damage == "payload_missing":
        payload.unlink()
    elif damage == "meta_not_object":
        d = json.loads(meta.read_text())
        d["meta"] = [1]
        meta.write_text(json.dumps(d))
    elif damage == "binary_meta":
        meta.write_bytes(b"\xff\xfe\x00garbage")
    c = cache.KernelCache(tmp_path)
    assert c.get(k) is None
    assert c.stats["corrupt"] == 1
    c.put(k, {"ptx": "PTX TEXT"}, {"a": 1})
    assert cache.KernelCache(tmp_path).get(k).payloads["ptx"] == "PTX TEXT"


def test_cache_unwritable_dir_warns_and_keeps_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    c = cache.KernelCache(blocker / "sub")
    with pytest.warns(RuntimeWarning, match="not writable"):
        c.put("cd" * 32, {"ptx": "x"})
    assert c.get("cd" * 32).payloads["ptx"] == "x"
    assert c.stats["write_errors"] == 1


def test_cache_rejects_bad_payload_names(tmp_path):
    with pytest.raises(ValueError):
        cache.KernelCache(tmp_path).put("ef" * 32, {"../x": "y"})


def test_cache_get_or_create_builds_once(tmp_path):
    c = cache.KernelCache(tmp_path)
    calls = []

    def build():
        calls.append(1)
        return {"ptx": "P"}, {"m": 2}

    for _ in range(3):
        assert c.get_or_create("01" * 32, build).meta == {"m": 2}
    assert len(calls) == 1


# ------------------------------------------------------------- host function IR

def _parse(text):
    pytest.importorskip("xdsl")
    from xdsl.context import Context
    from xdsl.dialects import arith, builtin, func, gpu, llvm, memref
    from xdsl.parser import Parser
    # gpu.memset has no xDSL definition (0.74): it parses as an unregistered op.
    ctx = Context(allow_unregistered=True)
    for d in (builtin.Builtin, func.Func, arith.Arith, gpu.GPU, memref.MemRef, llvm.LLVM):
        ctx.load_dialect(d)
    return Parser(ctx, text).parse_module()


# xDSL 0.74's gpu ops have no custom assembly, so the host function is written in
# generic syntax; it is the nvvm-level IR of docs/ir-levels.md.


def _host_ir(body, args="%x : memref<4x5xf32>, %y : memref<5xbf16>, %out : memref<4x5xf32>",
             attrs="{fuser.num_outputs = 1 : i64}"):
    return f"""
builtin.module attributes {{gpu.container_module}} {{
  func.func @f({args}) attributes {attrs} {{
    %c1 = arith.constant 1 : index
    %c2 = arith.constant 2 : index
    %c4 = arith.constant 4 : index
    %c128 = arith.constant 128 : index
    %smem = arith.constant 65536 : i32
    %zero = arith.constant 0.0 : f32
{body}
    func.return
  }}
  "gpu.module"() <{{sym_name = "f_kernels"}}> ({{
    llvm.func @f_k0(%a : !llvm.ptr<1>, %b : !llvm.ptr<1>, %c : !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
      llvm.return
    }}
    llvm.func @f_k1(%a : !llvm.ptr<1>, %b : !llvm.ptr<1>) attributes {{nvvm.kernel}} {{
      llvm.return
    }}
  }}) : () -> ()
}}
"""


PTX = ".version 8.0\n.target sm_90a\n.visible .entry f_k0(\n)\n{ ret; }\n.visible .entry f_k1(\n)\n{ ret; }\n"

GOOD_BODY = """
    %ws = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<8xi32>
    %ws2 = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<4x5xf32>
    "gpu.memset"(%ws, %zero) : (memref<8xi32>, f32) -> ()
    "gpu.launch_func"(%c4, %c1, %c1, %c128, %c1, %c1, %smem, %x, %y, %ws2) <{kernel = @f_kernels::@f_k0, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 1, 3, 0>}> : (index, index, index, index, index, index, i32, memref<4x5xf32>, memref<5xbf16>, memref<4x5xf32>) -> ()
    "gpu.launch_func"(%c2, %c2, %c1, %c128, %c1, %c1, %c2, %c1, %c1, %ws2, %out, %c4) <{kernel = @f_kernels::@f_k1, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 3, 0>}> : (index, index, index, index, index, index, index, index, index, memref<4x5xf32>, memref<4x5xf32>, index) -> ()
    "gpu.dealloc"(%ws) {operandSegmentSizes = array<i32: 0, 1>} : (memref<8xi32>) -> ()
    "gpu.dealloc"(%ws2) {operandSegmentSizes = array<i32: 0, 1>} : (memref<4x5xf32>) -> ()
"""


def test_extract_program_reads_the_host_function():
    p = plan.extract_program(_parse(_host_ir(GOOD_BODY)), PTX, "sm_90a")
    assert p.name == "f" and p.arch == "sm_90a" and p.ptx == PTX
    assert p.inputs == [BufferSpec("x", (4, 5), "f32"), BufferSpec("y", (5,), "bf16")]
    assert p.outputs == [BufferSpec("out", (4, 5), "f32")]
    assert p.workspaces == [WorkspaceSpec((8,), "i32", True), WorkspaceSpec((4, 5), "f32", False)]
    assert p.launches == [
        LaunchStep("f_k0", (4, 1, 1), (128, 1, 1), 65536, (("in", 0), ("in", 1), ("ws", 1))),
        LaunchStep("f_k1", (2, 2, 1), (128, 1, 1), 0, (("ws", 1), ("out", 0), ("const", "i64", 4)),
                   cluster=(2, 1, 1)),
    ]
    assert p.zero_outputs == ()


def test_extract_program_unnamed_args_and_zeroed_outputs():
    body = """
    "gpu.memset"(%1, %zero) : (memref<7xf32>, f32) -> ()
    "gpu.launch_func"(%c1, %c1, %c1, %c128, %c1, %c1, %0, %1) <{kernel = @f_kernels::@f_k1, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}> : (index, index, index, index, index, index, memref<7xi1>, memref<7xf32>) -> ()
"""
    text = _host_ir(body, args="%0 : memref<7xi1>, %1 : memref<7xf32>")
    p = plan.extract_program(_parse(text), PTX, "sm_90a")
    assert [b.name for b in p.inputs + p.outputs] == ["arg0", "arg1"]
    assert p.inputs[0].dtype == "i1"
    assert p.zero_outputs == (0,)


def test_program_json_round_trip():
    p = plan.extract_program(_parse(_host_ir(GOOD_BODY)), PTX, "sm_90a")
    assert Program.from_json(p.to_json()) == p
    no_ptx = p.to_json(include_ptx=False)
    assert "ptx" not in json.loads(no_ptx)
    assert Program.from_json(no_ptx, ptx=PTX) == p


def test_program_in_the_cache(tmp_path):
    p = plan.extract_program(_parse(_host_ir(GOOD_BODY)), PTX, "sm_90a")
    c = cache.KernelCache(tmp_path)
    cache.put_program(c, "aa" * 32, p)
    assert cache.get_program(cache.KernelCache(tmp_path), "aa" * 32) == p
    assert cache.get_program(c, "bb" * 32) is None


# A split-K-style host function: %sem (per-tile semaphores) is kept zero by its kernels.
KEPT_ZERO_BODY = """
    %sem = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> {fuser.kept_zero} : () -> memref<16xi32>
    %ws2 = "gpu.alloc"() <{operandSegmentSizes = array<i32: 0, 0, 0>}> : () -> memref<4x5xf32>
    "gpu.memset"(%ws2, %zero) : (memref<4x5xf32>, f32) -> ()
    "gpu.launch_func"(%c1, %c1, %c1, %c128, %c1, %c1, %sem, %ws2) <{kernel = @f_kernels::@f_k1, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}> : (index, index, index, index, index, index, memref<16xi32>, memref<4x5xf32>) -> ()
    "gpu.dealloc"(%sem) {operandSegmentSizes = array<i32: 0, 1>} : (memref<16xi32>) -> ()
    "gpu.dealloc"(%ws2) {operandSegmentSizes = array<i32: 0, 1>} : (memref<4x5xf32>) -> ()
"""


def test_kept_zero_workspace_survives_json():
    p = plan.extract_program(_parse(_host_ir(KEPT_ZERO_BODY)), PTX, "sm_90a")
    assert p.workspaces == [WorkspaceSpec((16,), "i32", zero_init=False, kept_zero=True),
                            WorkspaceSpec((4, 5), "f32", zero_init=True, kept_zero=False)]
    assert Program.from_json(p.to_json()) == p


def test_program_json_reads_workspaces_written_before_kept_zero():
    p = plan.extract_program(_parse(_host_ir(GOOD_BODY)), PTX, "sm_90a")
    d = json.loads(p.to_json())
    d["workspaces"] = [w[:3] for w in d["workspaces"]]  # the old [shape, dtype, zero_init] form
    assert Program.from_json(json.dumps(d)) == p


def test_memset_of_a_kept_zero_workspace_is_an_error():
    body = KEPT_ZERO_BODY.replace('"gpu.memset"(%ws2, %zero) : (memref<4x5xf32>, f32)',
                                  '"gpu.memset"(%sem, %zero) : (memref<16xi32>, f32)')
    with pytest.raises(ProgramError, match=r"gpu.memset in @f: workspace #0 is fuser.kept_zero"):
        plan.extract_program(_parse(_host_ir(body)), PTX, "sm_90a")


class _RecordingBuffer:
    """Stands for driver.DeviceBuffer: hands out fake pointers and logs memsets in `events`."""
    events: list = []
    _next = 0x1000

    def __init__(self, nbytes, stream=None):
        self.size, self.ptr = nbytes, _RecordingBuffer._next
        _RecordingBuffer._next += 0x1000

    def memset_zero(self, stream=None):
        self.events.append(("memset", self.ptr, stream))


def test_kept_zero_workspace_is_zeroed_once_per_stream(monkeypatch):
    from fuser.runtime import executor
    events = []
    monkeypatch.setattr(_RecordingBuffer, "events", events)
    monkeypatch.setattr(driver, "DeviceBuffer", _RecordingBuffer)
    monkeypatch.setattr(driver, "stream_handle", lambda s: s)
    prog = Program("f", [], [], [WorkspaceSpec((16,), "i32", kept_zero=True), WorkspaceSpec((8,), "f32"),
                                 WorkspaceSpec((4,), "f32", zero_init=True)],
                   [LaunchStep("k", (1, 1, 1), (32, 1, 1), 0, (("ws", 0), ("ws", 1), ("ws", 2)))], PTX, "sm_90a")
    ex = Executor(prog)
    # Skip _load (it needs a GPU): one step whose launch is logged after the memsets.
    step = executor._Step()
    step.grid, step.block, step.smem, step.cluster, step.dependent = (1, 1, 1), (32, 1, 1), 0, None, False
    step.params = SimpleNamespace(values=[0, 0, 0], address=0)
    step.fill, step.tfill = ((0, 0), (1, 1), (2, 2)), ()
    step.kernel = SimpleNamespace(launch_raw=lambda grid, block, smem, hs, params, cluster, dependent:
                                  events.append(("launch", hs, tuple(step.params.values))))
    ex._steps = [step]

    ex(stream=7)
    sem, plain, zeroed = (b.ptr for b in ex._ws_pool[7])
    first_call = [("memset", sem, 7), ("memset", zeroed, 7), ("launch", 7, (sem, plain, zeroed))]
    assert events == first_call
    ex(stream=7)  # same stream, same set: the kernels left %sem zero, so only zero_init is cleared
    assert events[3:] == [("memset", zeroed, 7), ("launch", 7, (sem, plain, zeroed))]
    del events[:]
    ex(stream=9)  # a new stream gets a new set, zeroed once more
    sem9, _, zeroed9 = (b.ptr for b in ex._ws_pool[9])
    assert sem9 != sem
    assert events[:2] == [("memset", sem9, 9), ("memset", zeroed9, 9)] and events[2][0] == "launch"


LAUNCH_K1 = ('"gpu.launch_func"(%c1, %c1, %c1, %c128, %c1, %c1, {a}, %out) <{{kernel = @f_kernels::@{k}, '
             'operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}}> : '
             '(index, index, index, index, index, index, {t}, memref<4x5xf32>) -> ()')


@pytest.mark.parametrize("body, attrs, message", [
    ('%m = memref.alloc() : memref<4xf32>', None, "unsupported op 'memref.alloc' in host function @f"),
    ('%nz = arith.constant 1.0 : f32\n"gpu.memset"(%out, %nz) : (memref<4x5xf32>, f32) -> ()', None,
     "only a constant zero fill value"),
    ('%nz = arith.constant -0.0 : f32\n"gpu.memset"(%out, %nz) : (memref<4x5xf32>, f32) -> ()', None,
     "only a constant zero fill value"),
    ('"gpu.memset"(%x, %zero) : (memref<4x5xf32>, f32) -> ()', None, "target must be a workspace"),
    (LAUNCH_K1.format(a="%x", k="f_k1", t="memref<4x5xf32>") +
     '\n"gpu.memset"(%out, %zero) : (memref<4x5xf32>, f32) -> ()', None, "after a launch used it"),
    (LAUNCH_K1.format(a="%x", k="f_k9", t="memref<4x5xf32>"), None,
     "kernel @f_k9 is not defined in gpu.module @f_kernels"),
    ('%s = memref.subview %x[0, 0] [1, 5] [1, 1] : memref<4x5xf32> to memref<5xf32, strided<[1]>>\n' +
     LAUNCH_K1.format(a="%s", k="f_k1", t="memref<5xf32, strided<[1]>>"), None,
     "unsupported op 'memref.subview'"),
    ('', "{}", "no host func.func with a 'fuser.num_outputs' attribute"),
    ('', "{fuser.num_outputs = 5 : i64}", "fuser.num_outputs = 5"),
])
def test_extract_program_errors_name_the_problem(body, attrs, message):
    text = _host_ir(body) if attrs is None else _host_ir(body, attrs=attrs)
    with pytest.raises(ProgramError, match=message.replace("(", r"\(").replace(")", r"\)")):
        plan.extract_program(_parse(text), PTX, "sm_90a")


def test_extract_program_checks_the_ptx_entries():
    with pytest.raises(ProgramError, match="'f_k0' is not an entry of the PTX"):
        plan.extract_program(_parse(_host_ir(GOOD_BODY)), ".entry other(\n)", "sm_90a")


def test_extract_program_rejects_unsupported_types():
    text = _host_ir("", args="%x : memref<4xui16>, %out : memref<4xf32>")  # (i8 is a fuser type since issue 31)
    with pytest.raises(ProgramError, match=r"argument 0 \(%x\): unsupported element type ui16"):
        plan.extract_program(_parse(text), PTX, "sm_90a")
    text = _host_ir("", args="%x : memref<?xf32>, %out : memref<4xf32>")
    with pytest.raises(ProgramError, match="dynamic shapes"):
        plan.extract_program(_parse(text), PTX, "sm_90a")


def test_nonconstant_grid_is_rejected():
    body = """
    %n = "gpu.block_dim"() <{dimension = #gpu<dim x>}> : () -> index
    "gpu.launch_func"(%n, %c1, %c1, %c128, %c1, %c1, %x, %out) <{kernel = @f_kernels::@f_k1, operandSegmentSizes = array<i32: 0, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 2, 0>}> : (index, index, index, index, index, index, memref<4x5xf32>, memref<4x5xf32>) -> ()
"""
    with pytest.raises(ProgramError, match="unsupported op 'gpu.block_dim'"):
        plan.extract_program(_parse(_host_ir(body)), PTX, "sm_90a")


# ------------------------------------------------------------------- arguments

def _program(inputs, outputs=(("out", (4, 5), "f32"),)):
    return Program("f", [BufferSpec(*i) for i in inputs], [BufferSpec(*o) for o in outputs], [],
                   [LaunchStep("k", (1, 1, 1), (32, 1, 1), 0, (("in", 0), ("out", 0)))], PTX, "sm_90a")


XYZ = [("x", (4, 5), "f32"), ("y", (4, 5), "f32"), ("z", (5,), "i32")]


def test_argument_count_message():
    ex = Executor(_program(XYZ))
    with pytest.raises(ArgumentError, match=r"^expected 3 arguments \(x, y, z\), got 2$"):
        ex(np.zeros((4, 5), np.float32), np.zeros((4, 5), np.float32))


@pytest.mark.parametrize("bad, index, got", [
    (lambda: np.ones((4, 5), np.float16), 1, "got numpy float16 array of shape (4, 5)"),
    (lambda: np.ones((5, 4), np.float32), 1, "got numpy float32 array of shape (5, 4)"),
    (lambda: np.ones((5, 4), np.float32).T, 1, "got non-contiguous numpy float32 array of shape (4, 5)"),
    (lambda: [[1.0] * 5] * 4, 1, "got list"),
    (lambda: 3.0, 1, "got float"),
])
def test_argument_mismatch_messages(bad, index, got):
    ex = Executor(_program(XYZ))
    args = [np.ones((4, 5), np.float32), np.ones((4, 5), np.float32), np.ones(5, np.int32)]
    args[index] = bad()
    with pytest.raises(ArgumentError) as e:
        ex(*args)
    assert str(e.value).startswith(f"argument 1 ('%y'): expected tensor<4x5xf32>, {got}")


def test_argument_messages_for_other_dtypes():
    with pytest.raises(ArgumentError, match=r"argument 0 \('%m'\): expected tensor<3xi1>, got numpy int8"):
        Executor(_program([("m", (3,), "i1")]))(np.zeros(3, np.int8))
    with pytest.raises(ArgumentError, match=r"expected tensor<f32>, got numpy float64 array of shape \(\)"):
        Executor(_program([("s", (), "f32")]))(np.ones((), np.float64))
    # numpy scalars count as 0-d arrays
    assert convert_arg(np.float32(2.0), 0, BufferSpec("s", (), "f32"))[1] == 2.0


def test_accepted_host_arrays_are_marked_for_upload():
    spec = BufferSpec("x", (2, 3), "f32")
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    ptr, host, kind, ref = convert_arg(x, 0, spec)
    assert ptr is None and host is x and kind == "numpy"
    ml_dtypes = pytest.importorskip("ml_dtypes")
    b = np.ones((2, 3), ml_dtypes.bfloat16)
    assert convert_arg(b, 0, BufferSpec("b", (2, 3), "bf16"))[1] is b
    assert convert_arg(np.zeros(3, bool), 0, BufferSpec("m", (3,), "i1"))[1] is not None


class _CAI:
    def __init__(self, shape, typestr, strides=None, stream=1, ptr=0x7000_0000):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": typestr, "strides": strides,
                                         "data": (ptr, False), "version": 3, "stream": stream}


def test_cuda_array_interface_inputs():
    spec = BufferSpec("x", (4, 5), "f32")
    ptr, host, kind, ref = convert_arg(_CAI((4, 5), "<f4"), 0, spec)
    assert (ptr, host, kind) == (0x7000_0000, None, "device")
    assert arrays.foreign_stream((ptr, host, kind, ref)) is None
    assert arrays.foreign_stream(convert_arg(_CAI((4, 5), "<f4", stream=0xABC), 0, spec)) == 0xABC
    assert convert_arg(_CAI((4, 5), "<f4", strides=(20, 4)), 0, spec)[0] == 0x7000_0000
    assert convert_arg(_CAI((1, 5), "<f4", strides=(999, 4)), 0, BufferSpec("x", (1, 5), "f32"))[0]
    assert convert_arg(_CAI((5,), "<V2"), 0, BufferSpec("b", (5,), "bf16"))[0]
    with pytest.raises(ArgumentError, match=r"expected tensor<4x5xf32>, got non-contiguous .*strides \(4, 16\)"):
        convert_arg(_CAI((4, 5), "<f4", strides=(4, 16)), 0, spec)
    with pytest.raises(ArgumentError, match=r"expected tensor<4x5xf32>, got .* <f2 device array of shape \(4, 5\)"):
        convert_arg(_CAI((4, 5), "<f2"), 0, spec)


class _DLPackFrom:
    """A DLPack producer that wraps a numpy array and claims a device."""

    def __init__(self, arr, device):
        self.arr, self.device = arr, device

    def __dlpack__(self, stream=None):
        return self.arr.__dlpack__()

    def __dlpack_device__(self):
        return self.device


def test_dlpack_inputs():
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    spec = BufferSpec("x", (4, 5), "f32")
    # a CUDA producer: the pointer, shape and dtype come from the DLPack capsule
    ptr, host, kind, ref = convert_arg(_DLPackFrom(x, (2, 0)), 0, spec)
    assert ptr == x.ctypes.data and host is None and kind == "device"
    with pytest.raises(ArgumentError, match=r"expected tensor<4x5xf32>, got .*code 0, 32 bits"):
        convert_arg(_DLPackFrom(x.astype(np.int32), (2, 0)), 0, spec)
    with pytest.raises(ArgumentError, match="non-contiguous"):
        convert_arg(_DLPackFrom(np.ones((5, 4), np.float32).T, (2, 0)), 0, spec)
    with pytest.raises(ArgumentError, match="CUDA device 0"):
        convert_arg(_DLPackFrom(x, (2, 1)), 0, spec)
    # a host producer is uploaded like a numpy array
    ptr, host, kind, _ = convert_arg(_DLPackFrom(x, (1, 0)), 0, spec)
    assert ptr is None and kind == "numpy" and np.array_equal(host, x)


def test_validation_happens_before_the_gpu_is_touched(monkeypatch):
    def boom(*a, **k):
        raise AssertionError("GPU touched before validation")

    monkeypatch.setattr(driver, "require_gpu", boom)
    ex = Executor(_program(XYZ))
    with pytest.raises(ArgumentError):
        ex(np.ones((4, 5), np.float32), np.ones((4, 5), np.float32), np.ones(5, np.int64))
    assert ex._steps is None


@pytest.mark.skipif(driver.gpu_available(), reason="this machine has a GPU")
def test_valid_call_without_gpu_raises_no_gpu_error():
    ex = Executor(_program([("x", (4, 5), "f32")]))
    with pytest.raises(driver.NoGPUError):
        ex(np.ones((4, 5), np.float32))


def test_device_array_metadata_without_gpu():
    a = arrays.DeviceArray((0, 3), "bf16")
    cai = a.__cuda_array_interface__
    assert cai["shape"] == (0, 3) and cai["typestr"] == "<V2" and cai["version"] == 3
    assert repr(a).startswith("DeviceArray(tensor<0x3xbf16>")


def test_compiler_fingerprint_tracks_the_compiler_source(tmp_path, monkeypatch):
    """A kernel cached by one build of the schedulers is never served to another: the compile
    key covers a digest of dialects/, passes/ and lowering/, not only the version string."""
    import shutil
    from pathlib import Path

    from fuser.runtime import cache

    fp = cache.compiler_fingerprint()
    assert fp.startswith(cache._fuser_version() + "+") and fp == cache.compiler_fingerprint()
    # Recompute over a copy of the tree with one scheduler byte changed.
    root = Path(cache.__file__).resolve().parent.parent
    for sub in cache._COMPILER_DIRS:
        shutil.copytree(root / sub, tmp_path / sub, ignore=shutil.ignore_patterns("__pycache__"))
    for name in cache._COMPILER_FILES:
        shutil.copy(root / name, tmp_path / name)
    (tmp_path / "runtime").mkdir()
    fake = tmp_path / "runtime" / "cache.py"
    fake.write_text("")
    monkeypatch.setattr(cache, "__file__", str(fake))
    monkeypatch.setattr(cache, "_fingerprint", None)
    assert cache.compiler_fingerprint() == fp
    monkeypatch.setattr(cache, "_fingerprint", None)
    with open(tmp_path / "lowering" / "normalization.py", "a") as f:
        f.write("\n# edited\n")
    assert cache.compiler_fingerprint() != fp
    # a file in a subpackage counts too
    fp2 = cache.compiler_fingerprint()
    monkeypatch.setattr(cache, "_fingerprint", None)
    with open(tmp_path / "dialects" / "sched" / "core.py", "a") as f:
        f.write("\n# edited\n")
    assert cache.compiler_fingerprint() != fp2


def test_coresident_launch_survives_json():
    p = plan.extract_program(_parse(_host_ir(KEPT_ZERO_BODY)), PTX, "sm_90a")
    assert not p.launches[0].coresident
    launch = [ln for ln in KEPT_ZERO_BODY.splitlines() if "gpu.launch_func" in ln][0]
    marked = launch.replace("}> : (index", "}> {fuser.coresident} : (index")
    p = plan.extract_program(_parse(_host_ir(KEPT_ZERO_BODY.replace(launch, marked))), PTX, "sm_90a")
    assert p.launches[0].coresident
    assert Program.from_json(p.to_json()) == p


def test_dependent_launch_survives_json():
    p = plan.extract_program(_parse(_host_ir(KEPT_ZERO_BODY)), PTX, "sm_90a")
    assert not p.launches[0].dependent
    launch = [ln for ln in KEPT_ZERO_BODY.splitlines() if "gpu.launch_func" in ln][0]
    marked = launch.replace("}> : (index", "}> {fuser.dependent_launch} : (index")
    p = plan.extract_program(_parse(_host_ir(KEPT_ZERO_BODY.replace(launch, marked))), PTX, "sm_90a")
    assert p.launches[0].dependent and not p.launches[0].coresident
    assert Program.from_json(p.to_json()) == p


def test_default_pipeline_chains_the_kernels_of_a_plan():
    """sched-dependent-launch in the default pipeline: a two-kernel split-K plan launches its
    second kernel as a dependent launch, whose PTX waits before its first load; a one-kernel
    plan has no dependent launch and no griddepcontrol."""
    import fuser

    two = fuser.compile("""
func.func @mm(%a: tensor<128x65536xbf16>, %b: tensor<65536x128xbf16>) -> tensor<128x128xf32> {
  %c = fusion.matmul %a, %b : tensor<128x65536xbf16>, tensor<65536x128xbf16> -> tensor<128x128xf32>
  func.return %c : tensor<128x128xf32>
}""")
    steps = two.program.launches
    assert len(steps) == 2 and [s.dependent for s in steps] == [False, True]
    second = two.ptx.split(f".entry {steps[1].kernel}(")[1]
    assert "griddepcontrol.wait;" in second
    assert second.index("griddepcontrol.wait;") < second.index("ld.global")
    assert "griddepcontrol.launch_dependents;" in two.ptx.split(f".entry {steps[1].kernel}(")[0]
    one = fuser.compile("""
func.func @scale(%x: tensor<1024xf32>) -> tensor<1024xf32> {
  %y = fusion.add %x, %x : tensor<1024xf32>
  func.return %y : tensor<1024xf32>
}""")
    assert [s.dependent for s in one.program.launches] == [False] and "griddepcontrol" not in one.ptx


@pytest.mark.parametrize("grid,per_sm,fits", [((4, 1, 1), 1, True), ((5, 1, 1), 1, False), ((8, 1, 1), 2, True)])
def test_coresident_grid_must_fit_the_gpu(monkeypatch, grid, per_sm, fits):
    """A grid whose CTAs wait on one another (serial split-K, persistent) is refused before it
    could hang on a GPU that cannot hold all of it (here 4 SMs)."""
    from fuser.runtime import executor
    monkeypatch.setattr(driver, "device", lambda: SimpleNamespace(sm_count=4))
    step = executor._Step()
    step.grid, step.block, step.smem = grid, (384, 1, 1), 200000
    step.kernel = SimpleNamespace(max_active_per_sm=lambda threads, smem: per_sm)
    if fits:
        executor._check_coresident(step, "mm_k0")
    else:
        with pytest.raises(driver.CudaError, match=r"kernel 'mm_k0': its 5 CTAs wait on one another .* this GPU holds "
                                                   r"4 \(4 SMs x 1\); compile with sms=4 or less"):
            executor._check_coresident(step, "mm_k0")


# ------------------------------------------------ the cached torch call, driver mocked at the launch

def _mocked_launch_path(monkeypatch):
    """An Executor's GPU side replaced at the driver call: fake CUDA torch tensors (CPU storage
    that says it is on GPU 0), a cuLaunchKernel that records the params block it was given."""
    torch = pytest.importorskip("torch")
    from fuser.runtime import executor

    class FakeCuda(torch.Tensor):
        __torch_function__ = torch._C._disabled_torch_function_impl
        is_cuda = property(lambda self: True)

        def get_device(self):
            return 0

    launches = []

    def launch(raw, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        slots = ctypes.cast(params, ctypes.POINTER(ctypes.c_void_p))
        launches.append(((gx, gy, gz), (bx, by, bz), stream,
                         [ctypes.c_uint64.from_address(slots[i]).value for i in range(3)]))
        return 0

    monkeypatch.setattr(driver, "require_gpu", lambda: None)
    monkeypatch.setattr(driver, "device_ordinal", lambda: 0)
    monkeypatch.setattr(arrays, "_bind_device", lambda o: 0)
    monkeypatch.setattr(driver._tls, "ctx", object(), raising=False)
    monkeypatch.setattr(driver, "_direct_state", [driver._Direct(launch, None)])
    monkeypatch.setattr(executor, "load_module", lambda ptx: None)
    monkeypatch.setattr(executor, "_kernel", lambda key, module, name, smem: driver.Kernel(77, name, None))
    monkeypatch.setattr(executor, "_torch_raw_stream", lambda index: 5)
    prog = Program("f", [BufferSpec("x", (4, 5), "f32"), BufferSpec("y", (5,), "f32")],
                   [BufferSpec("out", (4, 5), "f32")], [],
                   [LaunchStep("f_k0", (3, 1, 1), (128, 1, 1), 0, (("in", 0), ("in", 1), ("out", 0)))], PTX, "sm_90a")
    return torch, FakeCuda, launches, prog


@pytest.mark.parametrize("check", ["1", "0"])
def test_cached_torch_call_launches_with_precomputed_layout(monkeypatch, check):
    """The second and later calls take the cached path: each launch gets the inputs' and the new
    output's pointers in its slots, on torch's current stream; an argument of another shape is
    refused by the checks, and passed through unchecked with FUSER_CHECK_ARGS=0."""
    monkeypatch.setenv("FUSER_CHECK_ARGS", check)
    torch, FakeCuda, launches, prog = _mocked_launch_path(monkeypatch)
    ex = Executor(prog)
    fake = lambda t: torch.Tensor._make_subclass(FakeCuda, t)  # noqa: E731
    for i in range(3):
        x, y = fake(torch.randn(4, 5)), fake(torch.randn(5))
        out = ex(x, y)
        assert out.shape == (4, 5) and out.dtype == torch.float32
        assert launches[-1] == ((3, 1, 1), (128, 1, 1), 5, [x.data_ptr(), y.data_ptr(), out.data_ptr()])
        assert (ex._launchers is not None) == (i > 0)  # the first call took the general path
    wrong = fake(torch.randn(5, 4))
    if check == "1":
        with pytest.raises(ArgumentError, match=r"argument 0 \('%x'\): expected tensor<4x5xf32>"):
            ex(wrong, y)
    else:
        ex(wrong, y)  # the caller promised: no check
        assert launches[-1][3][0] == wrong.data_ptr()
    with pytest.raises(ArgumentError, match="expected 2 arguments"):
        ex(x)  # the count is checked either way (the cached path sends it to the general one)
    with pytest.raises(ArgumentError, match="argument 1"):
        ex(x, np.zeros(3, np.float32))  # not a tensor: the general path and its message


def test_check_args_env(monkeypatch):
    from fuser.runtime.executor import check_args_enabled

    for value, on in (("", True), ("1", True), ("0", False), ("false", False), ("off", False), ("yes", True)):
        monkeypatch.setenv("FUSER_CHECK_ARGS", value)
        assert check_args_enabled() is on
    monkeypatch.delenv("FUSER_CHECK_ARGS")
    assert check_args_enabled()
