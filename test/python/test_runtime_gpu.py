"""Runtime tests on a real GPU (skipped when none is found).

The kernels are hand-written PTX, so these tests exercise the driver wrapper and the
executor independently of the compiler:

- add_one(in, out, n):      out[i] = in[i] + 1.0f for i < n
- sum_atomic(in, acc, n):   acc[0] += in[i] (red.global.add), i < n
- copy_first(src, dst):     dst[0] = src[0]
"""

import time

import numpy as np
import pytest

from fuser.runtime import driver
from fuser.runtime.arrays import DeviceArray
from fuser.runtime.executor import Executor
from fuser.runtime.plan import BufferSpec, LaunchStep, Program, WorkspaceSpec

pytestmark = pytest.mark.gpu

PTX_HEADER = ".version 7.0\n.target sm_70\n.address_size 64\n"

PTX_BODY = r"""
.visible .entry add_one(
    .param .u64 p_in,
    .param .u64 p_out,
    .param .u32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<3>;
    .reg .b64 %rd<8>;

    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_out];
    ld.param.u32 %r1, [p_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd6, %rd3, %rd5;
    add.s64 %rd7, %rd4, %rd5;
    ld.global.f32 %f1, [%rd6];
    add.f32 %f2, %f1, 0f3F800000;
    st.global.f32 [%rd7], %f2;
DONE:
    ret;
}

.visible .entry sum_atomic(
    .param .u64 p_in,
    .param .u64 p_acc,
    .param .u32 p_n
)
{
    .reg .pred %p<2>;
    .reg .b32 %r<6>;
    .reg .f32 %f<2>;
    .reg .b64 %rd<6>;

    ld.param.u64 %rd1, [p_in];
    ld.param.u64 %rd2, [p_acc];
    ld.param.u32 %r1, [p_n];
    mov.u32 %r2, %ctaid.x;
    mov.u32 %r3, %ntid.x;
    mov.u32 %r4, %tid.x;
    mad.lo.s32 %r5, %r2, %r3, %r4;
    setp.ge.u32 %p1, %r5, %r1;
    @%p1 bra DONE;
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    mul.wide.u32 %rd5, %r5, 4;
    add.s64 %rd5, %rd3, %rd5;
    ld.global.f32 %f1, [%rd5];
    red.global.add.f32 [%rd4], %f1;
DONE:
    ret;
}

.visible .entry copy_first(
    .param .u64 p_src,
    .param .u64 p_dst
)
{
    .reg .f32 %f<2>;
    .reg .b64 %rd<5>;

    ld.param.u64 %rd1, [p_src];
    ld.param.u64 %rd2, [p_dst];
    cvta.to.global.u64 %rd3, %rd1;
    cvta.to.global.u64 %rd4, %rd2;
    ld.global.f32 %f1, [%rd3];
    st.global.f32 [%rd4], %f1;
    ret;
}
"""

PTX = PTX_HEADER + PTX_BODY
N = 1000  # not a multiple of the 256-thread block: the bounds check matters


def _grid(n, block=256):
    return ((n + block - 1) // block, 1, 1)


def add_one_program(n=N):
    return Program(
        "add_one", [BufferSpec("x", (n,), "f32")], [BufferSpec("y", (n,), "f32")], [],
        [LaunchStep("add_one", _grid(n), (256, 1, 1), 0, (("in", 0), ("out", 0), ("const", "i32", n)))],
        PTX, "sm_70")


def sum_program(n=N):
    """sum(x) through a zero-initialized workspace accumulator, then copied out."""
    return Program(
        "sum", [BufferSpec("x", (n,), "f32")], [BufferSpec("s", (1,), "f32")],
        [WorkspaceSpec((1,), "f32", zero_init=True)],
        [LaunchStep("sum_atomic", _grid(n), (256, 1, 1), 0, (("in", 0), ("ws", 0), ("const", "i32", n))),
         LaunchStep("copy_first", (1, 1, 1), (1, 1, 1), 0, (("ws", 0), ("out", 0)))],
        PTX, "sm_70")


def _rand(n=N, seed=None):
    return np.random.default_rng(seed).standard_normal(n).astype(np.float32)


# ------------------------------------------------------------------------ driver

def test_device_properties():
    p = driver.device()
    print(f"\n{p.name}: cc {p.cc}, {p.sm_count} SMs, L2 {p.l2_size >> 20} MiB, "
          f"smem/block opt-in {p.max_smem_per_block_optin} B, arch {p.arch}")
    assert p.sm_count > 0 and p.cc[0] >= 7 and p.max_smem_per_block_optin >= 48 * 1024


def test_buffer_copy_and_memset():
    x = _rand()
    buf = driver.DeviceBuffer(x.nbytes)
    buf.copy_from_host(x)
    back = buf.copy_to_host(np.empty_like(x))
    np.testing.assert_array_equal(back, x)
    buf.memset_zero()
    assert not buf.copy_to_host(np.empty_like(x)).any()
    buf.free()


def test_kernel_launch_with_scalar_arg():
    x = _rand()
    mod = driver.Module.load_ptx(PTX)
    k = mod.function("add_one")
    src, dst = driver.DeviceBuffer(x.nbytes), driver.DeviceBuffer(x.nbytes)
    src.copy_from_host(x)
    dst.memset_zero()
    k.launch(_grid(N), 256, 0, [src.ptr, dst, driver.Scalar(N - 10, "i32")])
    driver.synchronize()
    y = dst.copy_to_host(np.empty_like(x))
    np.testing.assert_array_equal(y[:N - 10], x[:N - 10] + np.float32(1))
    assert not y[N - 10:].any()  # past n: untouched by the bounds-checked kernel


def test_dynamic_smem_above_48k_needs_the_opt_in():
    mod = driver.Module.load_ptx(PTX)  # a fresh module: its kernels have no opt-in yet
    k = mod.function("add_one")
    buf = driver.DeviceBuffer(4 * N)
    buf.memset_zero()
    smem = 64 * 1024
    with pytest.raises(driver.CudaError, match="cuLaunchKernel failed"):
        k.launch(_grid(N), 256, smem, [buf, buf, driver.Scalar(N, "i32")])
    k.set_max_dynamic_smem(smem)
    k.launch(_grid(N), 256, smem, [buf, buf, driver.Scalar(N, "i32")])
    driver.synchronize()
    assert (buf.copy_to_host(np.empty(N, np.float32)) == 1).all()


def test_cluster_launch():
    if driver.device().cc[0] < 9:
        pytest.skip("thread-block clusters need sm_90")
    mod = driver.Module.load_ptx(".version 7.8\n.target sm_90\n.address_size 64\n" + PTX_BODY)
    k = mod.function("add_one")
    x = _rand()
    src, dst = driver.DeviceBuffer(x.nbytes), driver.DeviceBuffer(x.nbytes)
    src.copy_from_host(x)
    k.launch((4, 1, 1), 256, 0, [src, dst, driver.Scalar(N, "i32")], cluster=(2, 1, 1))
    driver.synchronize()
    np.testing.assert_array_equal(dst.copy_to_host(np.empty_like(x)), x + np.float32(1))


# Programmatic dependent launch: `slow_flag` lets its dependents launch at once, spins ~5 ms on
# the global timer, then sets flag[0] = 1; `read_flag` copies flag[0] to out[0], after a
# griddepcontrol.wait in `read_flag_waiting`, at once in `read_flag_now`.
PDL_PTX = ".version 8.0\n.target sm_90\n.address_size 64\n" + r"""
.visible .entry slow_flag(.param .u64 p_flag)
{
    .reg .pred %p<2>;
    .reg .b32 %r<2>;
    .reg .b64 %rd<5>;
    griddepcontrol.launch_dependents;
    ld.param.u64 %rd1, [p_flag];
    cvta.to.global.u64 %rd1, %rd1;
    mov.u64 %rd2, %globaltimer;
SPIN:
    mov.u64 %rd3, %globaltimer;
    sub.u64 %rd4, %rd3, %rd2;
    setp.lt.u64 %p1, %rd4, 5000000;
    @%p1 bra SPIN;
    mov.u32 %r1, 1;
    st.global.u32 [%rd1], %r1;
    ret;
}
.visible .entry read_flag_waiting(.param .u64 p_flag, .param .u64 p_out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    griddepcontrol.wait;
    ld.param.u64 %rd1, [p_flag];
    ld.param.u64 %rd2, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    ld.global.u32 %r1, [%rd1];
    st.global.u32 [%rd2], %r1;
    ret;
}
.visible .entry read_flag_now(.param .u64 p_flag, .param .u64 p_out)
{
    .reg .b32 %r<2>;
    .reg .b64 %rd<3>;
    ld.param.u64 %rd1, [p_flag];
    ld.param.u64 %rd2, [p_out];
    cvta.to.global.u64 %rd1, %rd1;
    cvta.to.global.u64 %rd2, %rd2;
    ld.volatile.global.u32 %r1, [%rd1];
    st.global.u32 [%rd2], %r1;
    ret;
}
"""


@pytest.mark.parametrize("stream", ["legacy", "created"])
def test_dependent_launch_overlaps_and_waits(stream):
    """A dependent launch starts while the kernel before it still runs (a reader that does not
    wait sees the flag unset), and griddepcontrol.wait holds it until that kernel is done (a
    reader that waits sees it set); a plain launch is serialized as always. On the legacy
    default stream, as torch uses it, and on a created stream."""
    if driver.device().cc[0] < 9:
        pytest.skip("programmatic dependent launch needs sm_90")
    torch = pytest.importorskip("torch")
    s = 0 if stream == "legacy" else torch.cuda.Stream()
    mod = driver.Module.load_ptx(PDL_PTX)
    slow = mod.function("slow_flag")
    flag, out = driver.DeviceBuffer(4), driver.DeviceBuffer(4)

    def run(reader: str, dependent: bool) -> int:
        flag.memset_zero()
        out.memset_zero()
        driver.synchronize()
        slow.launch(1, 32, 0, [flag], stream=s)
        mod.function(reader).launch(1, 32, 0, [flag, out], stream=s, dependent=dependent)
        driver.synchronize()
        return int(out.copy_to_host(np.empty(1, np.uint32))[0])

    for reader in ("read_flag_now", "read_flag_waiting"):  # a kernel's first launch loads it (lazy
        run(reader, dependent=False)                       # loading), which serializes that launch
    assert run("read_flag_now", dependent=True) == 0     # it ran during the 5 ms spin
    assert run("read_flag_now", dependent=False) == 1    # serialized after it
    assert run("read_flag_waiting", dependent=True) == 1  # the wait held it


def test_executor_launches_dependent_steps():
    """A Program step marked dependent goes out as a dependent launch; with its wait it reads
    what the step before it wrote, call after call."""
    if driver.device().cc[0] < 9:
        pytest.skip("programmatic dependent launch needs sm_90")
    prog = Program(
        "pdl", [], [BufferSpec("out", (1,), "i32")], [WorkspaceSpec((1,), "i32", zero_init=True)],
        [LaunchStep("slow_flag", (1, 1, 1), (32, 1, 1), 0, (("ws", 0),)),
         LaunchStep("read_flag_waiting", (1, 1, 1), (32, 1, 1), 0, (("ws", 0), ("out", 0)), dependent=True)],
        PDL_PTX, "sm_90")
    ex = Executor(prog)
    for _ in range(3):
        assert int(ex().numpy()[0]) == 1


def test_bad_ptx_reports_the_jit_log():
    with pytest.raises(driver.CudaError) as e:
        driver.Module.load_ptx(PTX_HEADER + ".visible .entry broken() { this is not ptx; }\n")
    msg = str(e.value)
    print("\n" + msg)
    assert msg.startswith("cuModuleLoadDataEx failed: CUDA_ERROR_")
    assert "JIT log:" in msg and "JIT log: (empty)" not in msg, msg


def test_missing_kernel_is_named():
    mod = driver.Module.load_ptx(PTX)
    with pytest.raises(driver.CudaError, match=r"kernel 'nope' not found .*entries: add_one, sum_atomic, copy_first"):
        mod.function("nope")


def test_time_fn():
    mod = driver.Module.load_ptx(PTX)
    k = mod.function("add_one")
    buf = driver.DeviceBuffer(4 * N)
    buf.memset_zero()
    times = driver.time_fn(lambda: k.launch(_grid(N), 256, 0, [buf, buf, driver.Scalar(N, "i32")]),
                           warmup=2, reps=5)
    assert len(times) == 5 and all(t > 0 for t in times)


# ---------------------------------------------------------------------- executor

def test_executor_numpy_in_numpy_out():
    x = _rand()
    y = Executor(add_one_program())(x)
    assert isinstance(y, np.ndarray) and y.dtype == np.float32 and y.shape == (N,)
    np.testing.assert_array_equal(y, x + np.float32(1))


def test_executor_rezeroes_workspaces_every_call():
    ex = Executor(sum_program())
    for seed in range(3):
        # small integers: the float sum is exact whatever order the atomics run in
        x = np.random.default_rng(seed).integers(-8, 9, N).astype(np.float32)
        s = ex(x)
        assert s.shape == (1,) and s[0] == x.sum(dtype=np.float64), (seed, s, x.sum())


def test_executor_device_arrays_chain_without_copies():
    x = _rand()
    a = DeviceArray((N,), "f32")
    a.buffer.copy_from_host(x)
    ex = Executor(add_one_program())
    b = ex(a)
    c = ex(b)  # an output feeds the next call directly
    assert isinstance(c, DeviceArray) and c.__cuda_array_interface__["shape"] == (N,)
    np.testing.assert_array_equal(c.numpy(), (x + np.float32(1)) + np.float32(1))


def test_executor_torch_tensors():
    torch = pytest.importorskip("torch")
    x = torch.randn(N, device="cuda")
    ex = Executor(add_one_program())
    y = ex(x)
    assert isinstance(y, torch.Tensor) and y.is_cuda and y.dtype == torch.float32
    torch.testing.assert_close(y, x + 1, rtol=0, atol=0)
    # on a side stream: the executor launches on torch's current stream
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        x2 = torch.randn(N, device="cuda")
        y2 = ex(x2)
    s.synchronize()
    torch.testing.assert_close(y2, x2 + 1, rtol=0, atol=0)
    # CPU tensors are uploaded and come back as CPU tensors
    xc = torch.randn(N)
    yc = ex(xc)
    assert isinstance(yc, torch.Tensor) and yc.device.type == "cpu"
    torch.testing.assert_close(yc, xc + 1, rtol=0, atol=0)


def test_executor_torch_errors_name_the_argument():
    torch = pytest.importorskip("torch")
    from fuser.runtime.arrays import ArgumentError
    ex = Executor(add_one_program())
    with pytest.raises(ArgumentError, match=r"argument 0 \('%x'\): expected tensor<1000xf32>, got torch float16"):
        ex(torch.randn(N, device="cuda", dtype=torch.float16))
    with pytest.raises(ArgumentError, match="non-contiguous"):
        ex(torch.randn(2 * N, device="cuda")[::2])


def test_executor_torch_fast_path_still_checks_every_call():
    """After the first call, torch CUDA tensors skip the general conversion (the backend's hot
    path); a call that does not fit the seen signature still gets the general checks and their
    errors, and results stay right across calls."""
    torch = pytest.importorskip("torch")
    from fuser.runtime.arrays import ArgumentError
    ex = Executor(add_one_program())
    x = torch.randn(N, device="cuda")
    torch.testing.assert_close(ex(x), x + 1, rtol=0, atol=0)
    assert ex._torch_want is not None and ex._torch_pointers((x,)) == [x.data_ptr()]
    for _ in range(3):
        x = torch.randn(N, device="cuda")
        torch.testing.assert_close(ex(x), x + 1, rtol=0, atol=0)
    with pytest.raises(ArgumentError, match="got torch float16"):
        ex(x.half())
    with pytest.raises(ArgumentError, match=r"argument 0 \('%x'\): expected tensor<1000xf32>"):
        ex(torch.randn(N + 1, device="cuda"))
    with pytest.raises(ArgumentError, match="non-contiguous"):
        ex(torch.randn(2 * N, device="cuda")[::2])
    with pytest.raises(ArgumentError, match="expected 1 arguments"):
        ex(x, x)
    yc = ex(x.cpu())  # a CPU tensor: uploaded, and a CPU tensor back
    assert yc.device.type == "cpu"
    torch.testing.assert_close(yc, x.cpu() + 1, rtol=0, atol=0)
    assert ex._torch_pointers((x.cpu(),)) is None and ex._torch_pointers((x.cpu().numpy(),)) is None


@pytest.mark.parametrize("how", ["direct", "bindings"])
def test_direct_and_bindings_launches(how, monkeypatch):
    """Launches go through libcuda by ctypes where it loads (every machine with a driver), else
    through cuda.bindings; both launch plain, cluster and dependent kernels alike."""
    if how == "direct":
        assert driver._direct() is not None, "libcuda.so.1 loads wherever the GPU tests run"
    else:
        monkeypatch.setattr(driver, "_direct_state", [None])
    mod = driver.Module.load_ptx(".version 7.8\n.target sm_90\n.address_size 64\n" + PTX_BODY)
    k = mod.function("add_one")
    x = _rand(seed=3)
    src, dst = driver.DeviceBuffer(x.nbytes), driver.DeviceBuffer(x.nbytes)
    src.copy_from_host(x)
    for extra in ({}, {"cluster": (2, 1, 1)}, {"dependent": True}, {"cluster": (2, 1, 1), "dependent": True}):
        dst.memset_zero()
        k.launch((4, 1, 1), 256, 0, [src, dst, driver.Scalar(N, "i32")], **extra)
        driver.synchronize()
        np.testing.assert_array_equal(dst.copy_to_host(np.empty_like(x)), x + np.float32(1), err_msg=str(extra))
    with pytest.raises(driver.CudaError, match=r"cuLaunchKernel failed \(add_one\): CUDA_ERROR_INVALID_VALUE"):
        k.launch((1, 1, 1), 4096, 0, [src, dst, driver.Scalar(N, "i32")])  # 4096 threads: over the limit


def test_direct_and_bindings_tensor_maps_are_the_same_bytes(monkeypatch):
    """cuTensorMapEncodeTiled through ctypes (the executor's per-call encode) gives the bytes
    cuda.bindings' call gives, for every element type, rank and swizzle the matmuls use; a bad
    box is refused by either with the call named."""
    assert driver._direct_encode() is not None, "libcuda.so.1 loads wherever the GPU tests run"
    buf = driver.DeviceBuffer(1 << 22)
    cases = [((256, 512), "bf16", (64, 64), 128), ((3, 100, 72), "f16", (1, 32, 32), 64),
             ((4096,), "f32", (32,), 0), ((128, 256), "f8e4m3fn", (64, 128), 128), ((77, 40), "f32", (8, 8), 32)]
    direct = [driver.encode_tensor_map(buf.ptr + 256, *c) for c in cases]
    monkeypatch.setattr(driver, "_direct_encode", lambda: None)
    bindings = [driver.encode_tensor_map(buf.ptr + 256, *c) for c in cases]
    assert all(len(d) == 128 for d in direct)
    assert direct == bindings
    monkeypatch.undo()
    with pytest.raises(driver.CudaError, match="cuTensorMapEncodeTiled"):
        driver.encode_tensor_map(buf.ptr, (256, 512), "bf16", (512, 64), 128)  # a box dim over 256


def test_executor_dlpack_producer():
    torch = pytest.importorskip("torch")

    class Producer:  # only the DLPack protocol, so the generic DLPack path is used
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    x = torch.randn(N, device="cuda")
    y = Executor(add_one_program())(Producer(x))
    assert isinstance(y, DeviceArray)
    np.testing.assert_array_equal(y.numpy(), (x + 1).cpu().numpy())


def test_executor_cupy_arrays():
    cupy = pytest.importorskip("cupy")
    x = cupy.random.standard_normal(N, dtype=cupy.float32)
    y = Executor(add_one_program())(x)
    assert isinstance(y, cupy.ndarray)
    cupy.testing.assert_array_equal(y, x + 1)


def test_cached_launch_host_overhead():
    """Prints the host time of a cached launch (no assertion: timing is not a test)."""
    ex = Executor(add_one_program())
    try:
        import torch
        x = torch.randn(N, device="cuda")
        label = "torch tensors"
    except ImportError:
        x = DeviceArray((N,), "f32")
        x.buffer.memset_zero()
        label = "DeviceArray"
    for _ in range(50):
        ex(x)
    driver.synchronize()
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        ex(x)
    t1 = time.perf_counter()
    driver.synchronize()
    per_call = (t1 - t0) / reps * 1e6
    # the raw launch alone, for comparison
    k = ex._steps[0]
    ptr = x.data_ptr() if label == "torch tensors" else x.ptr
    k.params.values[0] = k.params.values[1] = ptr  # in place, on memory we own
    bare = {}
    for how in ("direct", "bindings"):
        saved = list(driver._direct_state)
        if how == "bindings":
            driver._direct_state[:] = [None]
        try:
            for dependent in (False, True):
                t2 = time.perf_counter()
                for _ in range(reps):
                    k.kernel.launch_raw(k.grid, k.block, k.smem, driver.stream_handle(0), k.params.address,
                                        None, dependent)
                bare[how, dependent] = (time.perf_counter() - t2) / reps * 1e6
                driver.synchronize()
        finally:
            driver._direct_state[:] = saved
    print(f"\ncached Executor call ({label}): {per_call:.1f} us host time; bare launch through ctypes "
          f"{bare['direct', False]:.1f} us ({bare['direct', True]:.1f} us dependent), through cuda.bindings "
          f"{bare['bindings', False]:.1f} us ({bare['bindings', True]:.1f} us dependent)")


def test_torch_bf16_and_bool_are_accepted_directly_and_through_dlpack():
    torch = pytest.importorskip("torch")
    from fuser.runtime.arrays import convert_arg

    class Producer:
        def __init__(self, t):
            self.t = t

        def __dlpack__(self, stream=None):
            return self.t.__dlpack__(stream=stream)

        def __dlpack_device__(self):
            return self.t.__dlpack_device__()

    for tdt, name in [(torch.bfloat16, "bf16"), (torch.bool, "i1"), (torch.int64, "i64")]:
        t = torch.zeros((3, 4), dtype=tdt, device="cuda")
        spec = BufferSpec("t", (3, 4), name)
        assert convert_arg(t, 0, spec)[0] == t.data_ptr()
        assert convert_arg(Producer(t), 0, spec)[0] == t.data_ptr()


def test_device_array_host_overhead():
    """Prints the host time of a cached call on DeviceArray inputs (outputs are
    stream-ordered allocations)."""
    ex = Executor(add_one_program())
    x = DeviceArray((N,), "f32")
    x.buffer.memset_zero()
    for _ in range(50):
        ex(x)
    driver.synchronize()
    reps = 2000
    t0 = time.perf_counter()
    for _ in range(reps):
        ex(x)
    t1 = time.perf_counter()
    driver.synchronize()
    print(f"\ncached Executor call (DeviceArray): {(t1 - t0) / reps * 1e6:.1f} us host time")


def test_module_loads_from_the_cubin_made_ahead():
    """A fusion whose cubin the cache holds (driver.make_cubin: made by ptxas, as the backend's
    compile workers do) is loaded from it, not JIT-compiled from its PTX, and runs the same."""
    from fuser.lowering.target.ptx import find_ptxas
    from fuser.driver import make_cubin
    from fuser.runtime import executor

    if find_ptxas() is None:
        pytest.skip("no ptxas")
    text = """func.func @cubin_load(%x: tensor<33x257xf32>) -> tensor<33x257xf32> {
  %c = fusion.full 3.0 : tensor<33x257xf32>
  %y = fusion.mul %x, %c : tensor<33x257xf32>
  func.return %y : tensor<33x257xf32>
}"""
    import fuser.api as fz

    k = fz.compile(text)
    executor._modules.pop(executor._ptx_key(k.ptx), None)
    assert make_cubin(k.ptx)
    before = dict(executor.load_counts)
    x = np.random.default_rng(3).standard_normal((33, 257)).astype(np.float32)
    y = np.asarray(k(x))
    assert executor.load_counts["cubin"] == before["cubin"] + 1 and executor.load_counts["ptx"] == before["ptx"]
    np.testing.assert_array_equal(y, x * np.float32(3.0))
