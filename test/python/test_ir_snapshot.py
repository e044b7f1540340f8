"""fuser-ir-snapshot: a digest per input that moves when the sched IR moves, refusals recorded,
and --check reporting what changed."""

import json

import pytest

from fuser.tools import ir_snapshot

ROW_SUM = """func.func @rs(%x: tensor<64x4096xf32>) -> tensor<64xf32> {
  %s = fusion.reduce sum %x dims [1] : tensor<64x4096xf32> to tensor<64xf32>
  func.return %s : tensor<64xf32>
}"""


def test_digest_follows_the_sched_ir():
    a = ir_snapshot.digest(ROW_SUM, "to-sched")
    assert a == ir_snapshot.digest(ROW_SUM, "to-sched") and len(a) == 16
    assert ir_snapshot.digest(ROW_SUM, "to-sched{block=64}") != a  # another schedule, another digest


def test_refusal_is_recorded():
    bad = ROW_SUM.replace("dims [1]", "dims [2]")
    assert ir_snapshot.digest(bad, "to-sched").startswith("refused: ")


def test_pipelines_stop_at_sched():
    assert ir_snapshot._to_sched("default") == ir_snapshot._to_sched("to-sched")
    assert "convert-sched-to-nvvm" not in ir_snapshot._to_sched("default{split=1}")


def test_corpus_names_are_unique():
    names = [n for n, _, _ in ir_snapshot.corpus(fuzz=3, seed=5)]
    assert len(names) == len(set(names)) and "fuzz/7" in names and "examples/row_sum.mlir" in names


@pytest.mark.skipif(not (ir_snapshot._ROOT / "test" / "python").is_dir(),
                    reason="fuser-ir-snapshot runs from a source checkout; this fuser is an installed copy")
def test_write_then_check(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(ir_snapshot, "corpus", lambda fuzz, seed: [("row_sum", ROW_SUM, "to-sched")])
    snap = tmp_path / "snap.json"
    assert ir_snapshot.main(["--write", str(snap), "--fuzz", "0"]) == 0
    assert ir_snapshot.main(["--check", str(snap)]) == 0
    d = json.loads(snap.read_text())
    d["digests"]["row_sum"] = "0" * 16
    d["digests"]["gone_case"] = "1" * 16
    snap.write_text(json.dumps(d))
    assert ir_snapshot.main(["--check", str(snap)]) == 1
    out = capsys.readouterr().out
    assert "changed  row_sum: 0000000000000000 -> " in out and "gone     gone_case" in out
    assert ir_snapshot.main(["--check", str(tmp_path / "missing.json")]) == 2


SHARDS = 6  # the corpus in shards, so that pytest -n spreads it over the workers


@pytest.mark.parametrize("shard", range(SHARDS))
def test_kernels_do_not_depend_on_set_order(monkeypatch, shard):
    """SSA values and ops hash by address, so a set of them iterates in an order that differs
    from run to run. Compile the corpus (with the first fuzzer fusions) under two hash
    functions: the sched IR must not move. (Kernel parameters of values without names were
    ordered by set order: sanitize/matmul_pingpong and fuzzer seed 882 moved.) The first 12
    fuzzer fusions, not 30: they were a third of the corpus and most of its time."""
    from xdsl.ir import Operation, SSAValue
    from xdsl.irdl import IRDLOperation

    cases = list(ir_snapshot.corpus(12, 0))[shard::SHARDS]
    assert cases
    digests = []
    for salt in (1, 2):
        def salted(self, salt=salt):
            return hash((id(self), salt))
        for cls in (SSAValue, Operation, IRDLOperation):
            monkeypatch.setattr(cls, "__hash__", salted)
        digests.append({name: ir_snapshot.digest(text, pipeline) for name, text, pipeline in cases})
    changed = [name for name in digests[0] if digests[0][name] != digests[1][name]]
    assert not changed, f"{len(changed)} inputs compile differently: {changed[:10]}"
