"""The random stream of `fusion.uniform` and `fusion.normal` in numpy (the reference
interpreter's; dialects/fusion/creation.py defines it, lowering/emitters/random.py emits it in kernels).

`philox4x32(counters, key)` is Philox 4x32-10 on arrays of counters; `uniform` and `normal` give
the values of the elements with linear indices 0 .. n-1 of a result of a dtype.
"""

from __future__ import annotations

import math

import numpy as np

from fuser.dialects.fusion.creation import (PHILOX_M, PHILOX_ROUNDS, PHILOX_W, UNIFORM_BITS,
                                            elements_per_block)

_MASK = np.uint64(0xFFFFFFFF)


def philox4x32(ctr: np.ndarray, key: tuple[int, int], rounds: int = PHILOX_ROUNDS) -> np.ndarray:
    """Philox 4x32 of counters `ctr` (shape [n, 4], uint32-valued) under `key` (two 32-bit
    words): the [n, 4] uint32 output words."""
    c = [ctr[:, j].astype(np.uint64) for j in range(4)]
    k0, k1 = key[0] & 0xFFFFFFFF, key[1] & 0xFFFFFFFF
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + PHILOX_W[0]) & 0xFFFFFFFF, (k1 + PHILOX_W[1]) & 0xFFFFFFFF
        p0 = np.uint64(PHILOX_M[0]) * c[0]  # (products of two 32-bit words fit 64 bits)
        p1 = np.uint64(PHILOX_M[1]) * c[2]
        hi0, lo0 = p0 >> np.uint64(32), p0 & _MASK
        hi1, lo1 = p1 >> np.uint64(32), p1 & _MASK
        c = [hi1 ^ c[1] ^ np.uint64(k0), lo1, hi0 ^ c[3] ^ np.uint64(k1), lo0]
    return np.stack(c, axis=1).astype(np.uint32)


def _words(n_blocks: int, seed: int, offset: int) -> np.ndarray:
    seed, offset = seed & (2**64 - 1), offset & (2**64 - 1)  # the i64 operands' bits
    b = np.arange(n_blocks, dtype=np.uint64)
    ctr = np.stack([b & _MASK, b >> np.uint64(32), np.full_like(b, offset & 0xFFFFFFFF),
                    np.full_like(b, offset >> 32)], axis=1)
    return philox4x32(ctr, (seed & 0xFFFFFFFF, seed >> 32))


def unit_uniform(n: int, dtype: str, seed: int, offset: int) -> np.ndarray:
    """u in [0, 1) of elements 0 .. n-1 (float64 holding values exact in `dtype`)."""
    per = elements_per_block(dtype)
    w = _words(-(-n // per), seed, offset).astype(np.uint64)
    if dtype == "f64":
        a, b = w[:, 0::2].reshape(-1), w[:, 1::2].reshape(-1)
        bits = (a << np.uint64(21)) | (b >> np.uint64(11))
        return bits[:n].astype(np.float64) * 2.0 ** -53
    m = UNIFORM_BITS[dtype]
    return (w.reshape(-1)[:n] >> np.uint64(32 - m)).astype(np.float64) * 2.0 ** -m


def uniform(n: int, dtype: str, seed: int, offset: int, low: float, high: float, ftype) -> np.ndarray:
    """fusion.uniform's values of elements 0 .. n-1, computed in `ftype` (np.float32 for the
    f32/f16/bf16 kernels, float64 for f64 and the reference's f64 precision); the caller rounds
    them to the dtype."""
    u = unit_uniform(n, dtype, seed, offset).astype(ftype)
    return u * ftype(high - low) + ftype(low)


def standard_normal(n: int, seed: int, offset: int, dtype: str = "f32") -> np.ndarray:
    """The Box-Muller values z of elements 0 .. n-1 (float32: the kernels compute them in f32;
    float64 for an f64 result, from 53-bit uniforms, two elements a block)."""
    if dtype == "f64":
        w = _words(-(-n // 2), seed, offset).astype(np.uint64)
        u1 = (((w[:, 0] << np.uint64(21)) | (w[:, 1] >> np.uint64(11))) + np.uint64(1)).astype(np.float64) * 2.0 ** -53
        u2 = ((w[:, 2] << np.uint64(21)) | (w[:, 3] >> np.uint64(11))).astype(np.float64) * 2.0 ** -53
        r = np.sqrt(-2.0 * np.log(u1))
        t = (2.0 * math.pi) * u2
        return np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)[:n]
    w = _words(-(-n // 4), seed, offset).astype(np.uint64)
    pairs = w.reshape(-1, 2)  # (w0, w1), (w2, w3) of each block
    u1 = ((pairs[:, 0] >> np.uint64(8)) + np.uint64(1)).astype(np.float32) * np.float32(2.0 ** -24)
    u2 = (pairs[:, 1] >> np.uint64(8)).astype(np.float32) * np.float32(2.0 ** -24)
    r = np.sqrt(np.float32(-2.0) * np.log(u1))
    t = np.float32(2.0 * math.pi) * u2
    z = np.stack([r * np.cos(t), r * np.sin(t)], axis=1).reshape(-1)
    return z[:n].astype(np.float32)


def normal(n: int, seed: int, offset: int, mean: float, std: float, ftype, dtype: str = "f32") -> np.ndarray:
    """fusion.normal's values of elements 0 .. n-1 of a `dtype` result in `ftype` (see `uniform`)."""
    z = standard_normal(n, seed, offset, "f64" if dtype == "f64" else "f32").astype(ftype)
    return z * ftype(std) + ftype(mean)
