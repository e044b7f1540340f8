"""A seeded corpus of malformed inputs for fuser-opt: mutations of every example and lit input
(truncations, byte corruptions, swapped lines, wrong types, unknown ops and dialects, bad dims, unsupported
dtypes, dynamic shapes), hand-written bad files, and bad pipelines. The cases are generated, not
checked in; the same seed gives the same corpus.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass
class Case:
    name: str
    data: bytes
    args: tuple[str, ...] = ()


def sources() -> list[tuple[str, str]]:
    files = sorted((ROOT / "examples").glob("*.mlir")) + sorted((ROOT / "test" / "lit").rglob("*.mlir"))
    out = []
    for f in files:
        for i, chunk in enumerate(f.read_text().split("// -----")):
            body = "\n".join(l for l in chunk.splitlines() if not l.lstrip().startswith("//"))
            if body.strip():
                out.append((f"{f.parent.name}/{f.stem}#{i}", body + "\n"))
    return out


TYPE_SWAPS = [("xf32>", "xf64>"), ("xf32>", "xi8>"), ("xbf16>", "xf8E4M3FN>"), ("tensor<", "tensor<?x"),
              ("f32", "f31"), ("dims [1]", "dims [7]"), ("dims [0]", "dims [0, 0]"), ("fusion.", "fusoin."),
              ("sched.", "schd."), ("k_chunk ", "k_chunk -"), ("memref<", "memref<0x"), ("%", "%%")]


def _mutations(name: str, text: str, rng: random.Random):
    data = text.encode()
    for frac in (0.1, 0.5, 0.9):  # truncations
        yield Case(f"{name}:trunc{frac}", data[: int(len(data) * frac)])
    for k in range(3):  # byte corruptions
        pos = rng.randrange(len(data))
        byte = rng.choice([b"\xff", b"\x00", b"{", b"}", b"(", b'"', b"<", b":", b"%", b"@", b" "])
        yield Case(f"{name}:byte{k}", data[:pos] + byte + data[pos + 1:])
    for a, b in TYPE_SWAPS:
        if a in text:
            yield Case(f"{name}:swap[{a}->{b}]", text.replace(a, b, 1).encode())
    lines = text.splitlines()
    if len(lines) > 2:
        i = rng.randrange(1, len(lines) - 1)
        yield Case(f"{name}:dropline{i}", "\n".join(lines[:i] + lines[i + 1:]).encode())
        yield Case(f"{name}:dupline{i}", "\n".join(lines[:i + 1] + lines[i:]).encode())
        if len(lines) > 3:  # the second line of the pair often reads the first: a use before its definition
            j = rng.randrange(1, len(lines) - 2)
            yield Case(f"{name}:swaplines{j}", "\n".join(lines[:j] + [lines[j + 1], lines[j]] + lines[j + 2:]).encode())


HAND_WRITTEN = [
    Case("empty", b""),
    Case("only-spaces", b"   \n\n"),
    Case("garbage", b"\x00\x01\x02 not mlir at all"),
    Case("unknown-dialect", b'func.func @f() {\n  "foo.bar"() : () -> ()\n  func.return\n}\n'),
    Case("deep-nesting", b"builtin.module {\n" * 300 + b"}\n" * 300),
    Case("huge-dims", b"func.func @f(%x: tensor<99999999999999999999x8xf32>) -> tensor<99999999999999999999x8xf32> {\n"
                      b"  func.return %x : tensor<99999999999999999999x8xf32>\n}\n"),
    Case("dynamic-shape", b"func.func @f(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {\n"
                          b"  %y = fusion.exp %x : tensor<?x8xf32>\n  func.return %y : tensor<?x8xf32>\n}\n"),
    Case("f64-matmul", b"func.func @f(%a: tensor<8x8xf64>, %b: tensor<8x8xf64>) -> tensor<8x8xf64> {\n"
                       b"  %y = fusion.matmul %a, %b : tensor<8x8xf64>, tensor<8x8xf64> -> tensor<8x8xf64>\n"
                       b"  func.return %y : tensor<8x8xf64>\n}\n"),
    Case("use-before-def", b"func.func @f(%x: tensor<8xf32>) -> tensor<8xf32> {\n"
                           b"  %y = fusion.neg %z : tensor<8xf32>\n  %z = fusion.exp %x : tensor<8xf32>\n"
                           b"  func.return %y : tensor<8xf32>\n}\n"),
    Case("defined-in-own-region", b"func.func @f(%x: tensor<8x4xf32>) -> tensor<8xf32> {\n"
                                  b"  %s = fusion.segment (%a = %y : tensor<8x4xf32>) -> (tensor<8xf32>) {\n"
                                  b"    %y = fusion.exp %x : tensor<8x4xf32>\n"
                                  b"    %r = fusion.reduce sum %a dims [1] : tensor<8x4xf32> to tensor<8xf32>\n"
                                  b"    fusion.yield %r : tensor<8xf32>\n  }\n  func.return %s : tensor<8xf32>\n}\n"),
    Case("reduce-bad-dim", b"func.func @f(%x: tensor<4x8xf32>) -> tensor<4xf32> {\n"
                           b"  %s = fusion.reduce sum %x dims [5] : tensor<4x8xf32> to tensor<4xf32>\n"
                           b"  func.return %s : tensor<4xf32>\n}\n"),
]

BAD_PIPELINES = ["bogus", "default{", "convert-fusion-to-sched{tile=\"1x1\"}", "convert-fusion-to-sched{sms=-1}",
                 "fusion-split-k{factor=x}", "convert-fusion-to-sched{block=abc}", ",,", "sched-alias-smem{budget=-5}",
                 "convert-fusion-to-sched{matmul_store=smem}", "defualt", "fusion-translate-welford{mode=sometimes}"]


def corpus(seed: int = 11) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    for name, text in sources():
        cases += list(_mutations(name, text, rng))
    cases += HAND_WRITTEN
    example = (ROOT / "examples" / "row_sum.mlir").read_bytes()
    cases += [Case(f"pipeline:{p}", example, ("-p", p)) for p in BAD_PIPELINES]
    return cases


def located_or_one_line(stderr: str) -> bool:
    """A diagnostic the MLIR way (file:line:col: error:) or a one-line reason."""
    lines = [l for l in stderr.strip().splitlines() if l.strip()]
    if not lines:
        return False
    return bool(re.search(r":\d+:\d+: error: ", lines[0])) or "error:" in lines[0]
