"""fuser-ir-snapshot: a digest per input that moves when the sched IR moves, refusals recorded,
and --check reporting what changed."""

import json

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
