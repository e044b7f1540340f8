"""In-place outputs (issue 32) without a GPU: the `fusion.alias` declaration and its checks, the
schedule's in-place writes and their hazards (staged aliases), sched-verify-buffers, the
Program's alias, the reference interpreter and the API updating the input array, and the
PyTorch backend turning input mutations (batch norm's running statistics, p.add_) into
in-place outputs of its regions."""

from __future__ import annotations

import numpy as np
import pytest

import fuser
from fuser.dialects.ir import FuserDiagnostic, parse_module
from fuser.lowering.analysis.inplace import inplace_hazards
from fuser.passes.verify_buffers import check_buffers
from fuser.runtime.plan import Program

from xdsl.dialects import func
from fuser.dialects import sched


def _sgd(shape=(37, 5), with_sum=False):
    fb = fuser.FusionBuilder("sgd")
    p = fb.input(shape, "f32", name="p")
    g = fb.input(shape, "f32", name="g")
    fb.output(p - g * 0.1, alias=p)
    if with_sum:
        fb.output(fuser.sum(p, dims=list(range(len(shape)))))
    return fb


def _host(c, level="sched"):
    m = parse_module(c.ir(level))
    host = [o for o in m.body.block.ops if isinstance(o, func.FuncOp) and "fuser.num_outputs" in o.attributes][0]
    kernels = {o.sym_name.data: o for o in m.body.block.ops if isinstance(o, sched.KernelOp)}
    return m, host, kernels


def test_reference_updates_the_input_array():
    rng = np.random.default_rng(0)
    P, G = rng.standard_normal((37, 5), dtype=np.float32), rng.standard_normal((37, 5), dtype=np.float32)
    P0 = P.copy()
    out = fuser.compile(_sgd()).reference(P, G)
    assert out is P  # the input array itself, updated
    np.testing.assert_array_equal(P, P0 - G * np.float32(0.1))


def test_every_result_reads_the_inputs_as_passed():
    """A sum of p beside p's update sees the old p, in the reference and in the schedule: the
    reduction's kernel runs first (the planner puts readers of an aliased input before its
    writer), then the update is written in place."""
    rng = np.random.default_rng(1)
    P, G = rng.standard_normal((37, 5), dtype=np.float32), rng.standard_normal((37, 5), dtype=np.float32)
    P0 = P.copy()
    c = fuser.compile(_sgd(with_sum=True))
    upd, s = c.reference(P, G)
    assert upd is P
    np.testing.assert_allclose(s, P0.sum(), rtol=1e-5)
    m, host, kernels = _host(c)
    assert "fuser.staged_aliases" not in host.attributes
    first, second = [o for o in host.body.block.ops if isinstance(o, sched.LaunchOp)]
    assert host.body.block.args[3] in first.args  # the sum's output: the reduction first
    assert host.body.block.args[2] not in second.args and host.body.block.args[0] in second.args
    assert not inplace_hazards(host, kernels)
    check_buffers(m)


def test_pointwise_update_writes_the_input_buffer():
    c = fuser.compile(_sgd())
    m, host, kernels = _host(c)
    assert "fuser.staged_aliases" not in host.attributes
    (launch,) = [o for o in host.body.block.ops if isinstance(o, sched.LaunchOp)]
    assert host.body.block.args[0] in launch.args  # p is written, no output buffer is passed
    assert host.body.block.args[2] not in launch.args
    assert not [o for o in host.body.block.ops if isinstance(o, sched.WorkspaceOp)]
    (out,) = c.program.outputs
    assert out.alias == 0
    p2 = Program.from_json(c.program.to_json())
    assert p2.outputs[0].alias == 0 and p2.outputs[0] == out


def test_reduction_epilogue_updates_running_stat_in_place():
    """running = 0.9 running + 0.1 mean(x): the reduction kernel's epilogue reads and writes the
    same element of `running` in one thread, so it is written in place, not staged."""
    fb = fuser.FusionBuilder("stats")
    x = fb.input((6, 3, 5, 7), "f32", name="x")
    r = fb.input((3,), "f32", name="r")
    fb.output(r * 0.9 + fuser.sum(x, dims=[0, 2, 3]) * (0.1 / 210), alias=r)
    c = fuser.compile(fb)
    m, host, kernels = _host(c)
    assert "fuser.staged_aliases" not in host.attributes
    check_buffers(m)
    rng = np.random.default_rng(2)
    X, R = rng.standard_normal((6, 3, 5, 7), dtype=np.float32), rng.standard_normal(3, dtype=np.float32)
    R0 = R.copy()
    assert c.reference(X, R) is R
    np.testing.assert_allclose(R, R0 * 0.9 + X.mean(axis=(0, 2, 3)) * 0.1, rtol=1e-5, atol=1e-6)


def test_a_flip_into_itself_is_staged():
    fb = fuser.FusionBuilder("flip")
    x = fb.input((1001,), "f32", name="x")
    fb.output(fuser.flip(x, [0]), alias=x)
    c = fuser.compile(fb)
    m, host, kernels = _host(c)
    assert list(host.attributes["fuser.staged_aliases"].get_values()) == [0]
    X = np.arange(1001, dtype=np.float32)
    assert c.reference(X) is X
    np.testing.assert_array_equal(X, np.arange(1001, dtype=np.float32)[::-1])


def _rotation(n_inputs, shape=(31, 33)):
    """Input k returned into input k+1's place (mod n), the last one negated: two inputs make a
    swap (fuzz seed 11271021), three a rotation."""
    fb = fuser.FusionBuilder("rotate")
    xs = [fb.input(shape, "f32", name=f"x{k}") for k in range(n_inputs)]
    for k, x in enumerate(xs):
        fb.output(-x if k == n_inputs - 1 else x, alias=xs[(k + 1) % n_inputs])
    return fb


@pytest.mark.parametrize("n", [2, 3])
def test_inputs_swapped_or_rotated_in_place(n):
    """An input returned as is into another input's place keeps the values it had before any
    kernel wrote it: in the schedule (a staged one is copied aside first and into place last;
    sched-verify-buffers once refused the swap) and in the reference interpreter (which once
    copied the swapped values onto each other)."""
    c = fuser.compile(_rotation(n))
    m, host, kernels = _host(c)
    check_buffers(m)
    assert not inplace_hazards(host, kernels)
    assert "fuser.staged_aliases" in host.attributes
    xs = [np.full((31, 33), k + 1, np.float32) for k in range(n)]
    outs = c.reference(*xs)
    for k in range(n):
        assert outs[k] is xs[(k + 1) % n]
        want = -(k + 1) if k == n - 1 else k + 1
        np.testing.assert_array_equal(xs[(k + 1) % n], np.float32(want))


def test_an_input_returned_beside_its_own_update_keeps_the_old_values():
    """`return x, 2x` with the second into x (CPU fuzz seed 11310228): the first output is x as
    it was passed. The reference interpreter returned the updated array for it; the schedule
    copies x out before the update lands (the update is staged and copied in last)."""
    fb = fuser.FusionBuilder("keep")
    x = fb.input((31, 33), "f32", name="x")
    fb.output(x)
    fb.output(x * 2.0, alias=x)
    c = fuser.compile(fb)
    m, host, kernels = _host(c)
    check_buffers(m)
    assert not inplace_hazards(host, kernels)
    X = np.arange(31 * 33, dtype=np.float32).reshape(31, 33)
    X0 = X.copy()
    old, new = c.reference(X)
    assert new is X and old is not X
    np.testing.assert_array_equal(old, X0)
    np.testing.assert_array_equal(X, X0 * 2)


@pytest.mark.parametrize("seed", range(40))
def test_random_inplace_fusions(seed):
    """inplace_cases.py's random mixes of in-place and plain outputs: the schedule passes
    sched-verify-buffers with no hazard left, and the reference gives what numpy computes from
    the inputs as passed (each in-place output being its input array, updated)."""
    from inplace_cases import random_inplace

    fb, shape, n, outputs = random_inplace(seed)
    c = fuser.compile(fb)
    m, host, kernels = _host(c)
    check_buffers(m)
    assert not inplace_hazards(host, kernels)
    rng = np.random.default_rng(seed)
    X = [rng.standard_normal(shape, dtype=np.float32) for _ in range(n)]
    X0 = [x.copy() for x in X]
    got = c.reference(*X)
    got = list(got) if isinstance(got, (tuple, list)) else [got]
    assert len(got) == len(outputs)
    for o, (into, f) in zip(got, outputs):
        if into is not None:
            assert o is X[into]
        np.testing.assert_array_equal(o, f(X0))


@pytest.mark.parametrize("build", ["flip1", "same", "empty"])
def test_a_fusion_that_launches_no_kernel_compiles(build):
    """A flip of one element into itself, an input returned into itself, an output with no
    elements: no kernel, no PTX, and a program that launches nothing (the driver once raised
    a TranslationError traceback: GPU test_flip_into_itself_is_staged[1])."""
    fb = fuser.FusionBuilder(build)
    x = fb.input((0, 4) if build == "empty" else (1,), "f32", name="x")
    if build == "empty":
        fb.output(x * 2.0)
    else:
        fb.output(fuser.flip(x, [0]) if build == "flip1" else x, alias=x)
    c = fuser.compile(fb)
    assert c.ptx == "" and not c.program.launches
    X = np.full((0, 4) if build == "empty" else (1,), 3.0, np.float32)
    out = c.reference(X)
    assert out.shape == X.shape and (build == "empty" or out is X and X[0] == 3.0)


def test_verify_buffers_names_the_kernels():
    """The planner's schedule with its two launches swapped: the update writes p in place,
    then the reduction would sum the updated p."""
    c = fuser.compile(_sgd(with_sum=True))
    m, host, kernels = _host(c)
    check_buffers(m)
    first, second = [o for o in host.body.block.ops if isinstance(o, sched.LaunchOp)]
    second.detach()
    host.body.block.insert_op_before(second, first)
    names = [o.kernel.root_reference.data for o in (second, first)]
    with pytest.raises(FuserDiagnostic, match=rf"kernel @{names[1]} reads %p .* after kernel @{names[0]} wrote output "
                                              r"#0 into it in place: it would read the updated values"):
        check_buffers(m)


@pytest.mark.parametrize("build, msg", [
    (lambda fb, x, y: fb.output(fuser.sum(x, dims=[1]), alias=x), "shape and dtype"),
    (lambda fb, x, y: fb.output(x + 1, alias=x + 1), "must be an input"),
    (lambda fb, x, y: (fb.output(x + 1, alias=x), fb.output(x + 2, alias=x)), "already takes"),
    (lambda fb, x, y: fb.output(x + 1, y + 1, alias=x), "one output"),
    (lambda fb, x, y: fb.output(fuser.cast(x, "f16"), alias=x), "shape and dtype"),
    (lambda fb, x, y: fb.output(x + 1, alias=x, stride_order=[0, 1]), "row-major"),
])
def test_api_errors(build, msg):
    fb = fuser.FusionBuilder("bad")
    x = fb.input((4, 8), "f32", name="x")
    y = fb.input((4, 8), "f32", name="y")
    with pytest.raises(ValueError, match=msg):
        build(fb, x, y)


def test_api_takes_a_row_major_stride_order_with_an_alias():
    fb = fuser.FusionBuilder("ok")
    x = fb.input((4, 8), "f32", name="x")
    fb.output(x + 1, alias=x, stride_order=[1, 0])  # nvFuser's row-major: the input's own layout
    a = np.zeros((4, 8), np.float32)
    assert fuser.compile(fb).reference(a) is a and (a == 1).all()


def test_api_refuses_a_strided_input():
    fb = fuser.FusionBuilder("bad")
    x = fb.input((4, 8), "f32", name="x", strides=(0, 1))
    with pytest.raises(ValueError, match="dense input"):
        fb.output(x + 1, alias=x)


def test_nvfuser_spelling():
    fb = fuser.FusionBuilder("nv")
    x = fb.input((4, 8), "f32", name="x")
    fb.output(x * 2, alias_input=x)
    assert "fusion.alias = 0 : i64" in fb.mlir()


# ------------------------------------------------------------------ the PyTorch backend

torch = None


@pytest.fixture(scope="module")
def T():
    return pytest.importorskip("torch")


def test_batch_norm_running_stats_after_three_steps(T):
    from fuser.torch.backend import FuserBackend
    T.manual_seed(0)
    eager = T.nn.BatchNorm2d(5)
    mine = T.nn.BatchNorm2d(5)
    mine.load_state_dict(eager.state_dict())
    b = FuserBackend(executor="reference")
    compiled = T.compile(mine, backend=b)
    for step in range(3):
        x = T.randn(4, 5, 7, 3) * (step + 1) + step
        want = eager(x)
        got = compiled(x)
        T.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    T.testing.assert_close(mine.running_mean, eager.running_mean, rtol=1e-5, atol=1e-6)
    T.testing.assert_close(mine.running_var, eager.running_var, rtol=1e-5, atol=1e-6)
    assert b.stats.inplace_outputs == 2  # running_mean and running_var
    assert b.stats.reference_calls >= 3
    # the one copy_ left to PyTorch is num_batches_tracked's, whose i64 add PyTorch runs
    assert b.stats.torch_nodes.get("aten.copy_.default") == 1
    assert int(mine.num_batches_tracked) == int(eager.num_batches_tracked) == 3


def test_compiled_inplace_update(T):
    from fuser.torch.backend import FuserBackend

    def step(p, g, m):
        m.mul_(0.9).add_(g)
        p.add_(m, alpha=-0.01)
        return p.sum()

    b = FuserBackend(executor="reference")
    f = T.compile(step, backend=b)
    T.manual_seed(1)
    p, g, m = T.randn(33, 17), T.randn(33, 17), T.randn(33, 17)
    p2, m2 = p.clone(), m.clone()
    for _ in range(3):
        s = f(p, g, m)
        want = step(p2, g, m2)
        T.testing.assert_close(s, want, rtol=1e-4, atol=1e-4)
    T.testing.assert_close(p, p2)
    T.testing.assert_close(m, m2)
    assert b.stats.inplace_outputs == 2


@pytest.mark.parametrize("pos", [0, 4, 6])
def test_compiled_kv_cache_slot_write(T, pos):
    """cache[:, pos:pos+3] = new under torch.compile: slice_scatter and the functional copy are
    translated, and the copy_ into the cache becomes the region's in-place output."""
    from fuser.torch.backend import FuserBackend

    def write(cache, new, pos: int):
        cache[:, pos:pos + new.shape[1]] = new
        return cache

    b = FuserBackend(executor="reference")
    f = T.compile(write, backend=b, dynamic=False)
    T.manual_seed(2)
    C, N = T.randn(2, 9, 5), T.randn(2, 3, 5)
    C2 = C.clone()
    out = f(C, N, pos)
    write(C2, N, pos)
    assert T.equal(C, C2) and T.equal(out, C2)
    assert b.stats.inplace_outputs == 1 and not b.stats.torch_nodes


def test_slice_scatter_and_copy_translations(T):
    from fuser.torch.backend import FuserBackend

    def f(x, y, z):
        a = T.ops.aten.slice_scatter.default(x, y, 1, 2, 5)
        b = T.ops.aten.slice_scatter.default(x, y, 1, -3, None)
        c = T.ops.aten.copy.default(x, z)  # z broadcast along dim 0, cast to x's dtype
        return a * 2, b + 1, c

    b = FuserBackend(executor="reference")
    g = T.compile(f, backend=b, dynamic=False)
    T.manual_seed(3)
    x, y, z = T.randn(4, 8), T.randn(4, 3), T.randn(8, dtype=T.float64)
    for got, want in zip(g(x, y, z), f(x, y, z)):
        T.testing.assert_close(got, want)
    assert not b.stats.torch_nodes and b.stats.reference_calls == 1
