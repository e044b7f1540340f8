"""The normalization fusions the reference and GPU tests build (one definition for both)."""

from __future__ import annotations

import fuser.api as fz

EPS = 1e-5


def build_var_mean(shape, dt, dim, correction=1, keepdim=False):
    with fz.FusionBuilder("var_mean") as fb:
        x = fb.input(shape, dt, name="x")
        v, m = fz.var_mean(x, dim, correction=correction, keepdim=keepdim)
        fb.output(v, m)
    return fb


def build_welford(shape, dt, dim, keepdim=False):
    with fz.FusionBuilder("welford") as fb:
        x = fb.input(shape, dt, name="x")
        fb.output(*fz.welford(x, dim, keepdim=keepdim))
    return fb


def build_layer_norm(shape, dt):
    """y = (x - mean) * rstd * w + b over the last axis; outputs y (dt), mean and rstd ([R, 1], f32)."""
    r, c = shape
    with fz.FusionBuilder("layer_norm") as fb:
        x = fb.input(shape, dt, name="x")
        w = fb.input((c,), dt, name="w")
        b = fb.input((c,), dt, name="b")
        var, mean = fz.var_mean(x, 1, correction=0, keepdim=True)
        rstd = fz.rsqrt(var + EPS)
        y = (fz.cast(x, "f32") - mean) * rstd * fz.cast(w, "f32") + fz.cast(b, "f32")
        fb.output(fz.cast(y, dt), mean, rstd)
    return fb


def build_rms_norm(shape, dt):
    r, c = shape
    with fz.FusionBuilder("rms_norm") as fb:
        x = fb.input(shape, dt, name="x")
        w = fb.input((c,), dt, name="w")
        xf = fz.cast(x, "f32")
        ms = fz.sum(xf * xf, 1, keepdim=True) / float(c)
        y = xf * fz.rsqrt(ms + EPS) * fz.cast(w, "f32")
        fb.output(fz.cast(y, dt))
    return fb
