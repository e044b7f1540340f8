"""fuser-opt on the malformed-input corpus (malformed_corpus.py): every case, plain and (when
that accepts it) through `-p default -t ptx`, ends with exit 0 (the mutation left valid IR) or a
non-zero exit and a located diagnostic or one-line reason; never a Python traceback, never a
hang (30 s a case).
"""

from __future__ import annotations

import contextlib
import io
import signal

import pytest
from malformed_corpus import corpus, located_or_one_line

from fuser.tools.fuser_opt import main


HANG_SECONDS = 30


class _Hang(Exception):
    pass


def _alarm(*_):
    raise _Hang()


def _run(path, args) -> tuple[str, int | None, str]:
    err, out = io.StringIO(), io.StringIO()
    old = signal.signal(signal.SIGALRM, _alarm)
    # A hang runs forever; the slowest valid case (several matmuls through `-p default -t ptx`,
    # IR verified after every pass) takes 5-6 s alone on a 2-core machine and twice that with
    # the other test worker busy, so the alarm leaves room for that.
    signal.alarm(HANG_SECONDS)
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = main([str(path), *args])
        return "ok", rc, err.getvalue()
    except _Hang:
        return "hang", None, err.getvalue()
    except SystemExit as e:  # argparse
        return "ok", e.code if isinstance(e.code, int) else 1, err.getvalue()
    except BaseException as e:  # noqa: BLE001 - a traceback is the failure being tested for
        return f"traceback {type(e).__name__}: {e}", None, err.getvalue()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


SHARDS = 6  # the corpus in shards, so that pytest -n spreads it over the workers


def test_corpus_is_large():
    assert len(corpus()) >= 500


@pytest.mark.parametrize("shard", range(SHARDS))
def test_malformed_corpus(tmp_path, shard):
    cases = corpus()[shard::SHARDS]
    path = tmp_path / "case.mlir"
    failures, rejected, valid = [], 0, 0
    for c in cases:
        # Plain (parse, verify, print), then, if that accepted it, all the way to PTX (a rejected
        # input fails the same parse there). The IR is verified once, after the last pass: a pass
        # that breaks it is still a diagnostic, and per-pass verification doubled the time.
        for args in ([c.args] if c.args else [(), ("-p", "default", "-t", "ptx", "--verify-each=false")]):
            path.write_bytes(c.data)
            kind, rc, err = _run(path, args)
            if kind != "ok":
                failures.append(f"{c.name} {' '.join(args)}: {kind}")
            elif rc == 0:
                valid += 1
                continue
            elif located_or_one_line(err) and "Traceback" not in err:
                rejected += 1
            else:
                failures.append(f"{c.name} {' '.join(args)}: exit {rc} without a diagnostic: {err[:200]!r}")
            break
    print(f"\nmalformed corpus, shard {shard}: {len(cases)} inputs, {rejected} runs rejected with a diagnostic, "
          f"{valid} left valid by their mutation, {len(failures)} failures")
    assert not failures, "\n".join(failures[:30])


@pytest.mark.parametrize("name", ["empty", "garbage", "deep-nesting", "dynamic-shape", "f64-matmul", "reduce-bad-dim",
                                  "use-before-def"])
def test_hand_written_cases_are_rejected(tmp_path, name):
    c = next(c for c in corpus() if c.name == name)
    path = tmp_path / "case.mlir"
    path.write_bytes(c.data)
    kind, rc, err = _run(path, ("-p", "default", "-t", "ptx"))
    assert kind == "ok" and rc != 0 and located_or_one_line(err), (kind, rc, err)


def test_use_before_definition_is_a_verifier_error(tmp_path):
    """Not a crash in whichever pass first trips over it: the verifier names the op, the operand
    and where the operand is defined."""
    c = next(c for c in corpus() if c.name == "use-before-def")
    path = tmp_path / "case.mlir"
    path.write_bytes(c.data)
    kind, rc, err = _run(path, ())
    assert kind == "ok" and rc == 1
    assert err.strip() == f"{path}:2:3: error: 'fusion.neg' op operand #0 (%z) is used before its definition at {path}:3:3"


def test_value_defined_inside_its_users_region_is_a_verifier_error(tmp_path):
    """xDSL's parser leaves its placeholder in an op whose operand is defined inside the op's own
    region; that is a located error, not a ValueError from the first trait that asks its owner."""
    c = next(c for c in corpus() if c.name == "defined-in-own-region")
    path = tmp_path / "case.mlir"
    path.write_bytes(c.data)
    kind, rc, err = _run(path, ())
    assert kind == "ok" and rc == 1
    assert err.strip() == (f"{path}:2:3: error: 'fusion.segment' op operand #0 is used before its definition "
                           f"(a value defined inside this op's own regions, or after it)")
