"""fuser-bench output: the ratio table (plain or markdown), the notes above it, the workload list,
the JSON document (every number, the device and versions) and the PNG chart (matplotlib, lazily).

Ratios are peer time / fuser time, so > 1 means fuser is faster. "% ceil" is the fuser rate over
the measured device-to-device copy bandwidth (GB/s rows) or over the bf16 tensor-core peak
(TFLOP/s rows).
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from typing import Any, Sequence

from .timing import BAD_STATUSES, RowResult, _short
from .workloads import GiB, Workload, fmt_shape

COLUMNS = ["workload", "shape", "dtype", "unit", "fuser", "eager", "compile",
           "fuser/eager", "fuser/compile", "fuser/library", "% ceil"]


def _num(v: float | None, unit: str) -> str:
    if v is None:
        return "n/a"
    return f"{v:.1f}" if unit == "TFLOP/s" else f"{v:.0f}"


def _ratio(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _library_cell(r: RowResult) -> str:
    """`1.10x liger` (the ratio against the workload's library peer), `n/a liger`, or `-`."""
    if r.workload.library is None:
        return "-"
    ratio = r.ratio(r.library)
    return f"{'n/a' if ratio is None else _ratio(ratio)} {r.workload.library[0]}"


def table_rows(rows: Sequence[RowResult]) -> list[list[str]]:
    out = []
    for r in rows:
        w = r.workload
        if r.status in BAD_STATUSES or r.status == "unsupported":
            fuser = r.status
        elif r.status == "anchor":
            fuser = "-"
        else:
            fuser = _num(r.fuser.rate, w.unit)
        compile_cell = _num(r.compile.rate, w.unit) if w.compile_peer else "-"
        out.append([w.name, fmt_shape(r.shape), w.dtype, w.unit, fuser,
                    _num(r.eager.rate, w.unit), compile_cell,
                    _ratio(r.ratio(r.eager)), _ratio(r.ratio(r.compile)), _library_cell(r),
                    "-" if r.pct_ceiling is None else f"{r.pct_ceiling:.0f}%"])
    return out


def format_table(rows: Sequence[RowResult], markdown: bool = False) -> str:
    cells = table_rows(rows)
    if markdown:
        lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join(" --- " for _ in COLUMNS) + "|"]
        lines += ["| " + " | ".join(c) + " |" for c in cells]
        return "\n".join(lines)
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(COLUMNS)]
    left = {0, 1, 2, 3}

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(wd) if i in left else v.rjust(wd) for i, (v, wd) in enumerate(zip(values, widths))).rstrip()

    return "\n".join([line(COLUMNS), line(["-" * wd for wd in widths])] + [line(c) for c in cells])


def _clip(text: str | None, limit: int = 200) -> str:
    text = text or ""
    return text if len(text) <= limit else text[: limit - 3] + "..."


def notes(rows: Sequence[RowResult]) -> list[str]:
    """One line per FAIL/ERROR and per unavailable peer, for the text before the table."""
    out = []
    for r in rows:
        if r.status in BAD_STATUSES or r.status == "unsupported":
            out.append(f"{r.workload.name}: fuser {r.status}: {_clip(r.fuser.error)}")
        library = () if r.workload.library is None else ((r.workload.library[0], r.library),)
        for peer_name, peer in (("eager", r.eager), ("torch.compile", r.compile), *library):
            if peer.error and not peer.error.startswith(("skipped", "not a peer")):
                out.append(f"{r.workload.name}: {peer_name} n/a: {_clip(peer.error)}")
        if r.compile.rel_err is not None and r.compile.rel_err > r.workload.rtol:
            out.append(f"{r.workload.name}: torch.compile differs from eager by {r.compile.rel_err:.3g} "
                       f"(> {r.workload.rtol:g}); timed anyway")
    return out


def list_workloads(ws: Sequence[Workload]) -> str:
    """`--list`: the registry as a plain table (needs no GPU, no torch)."""
    head = ["workload", "family", "dtype", "shape", "quick shape", "MB moved", "fuser"]
    cells = [[w.name, w.family, w.dtype, fmt_shape(w.shape), fmt_shape(w.quick_shape),
              f"{w.bytes_moved(w.shape, w.dtype) / 1e6:.0f}", "yes" if w.has_fusion else "anchor"] for w in ws]
    widths = [max(len(h), *(len(c[i]) for c in cells)) if cells else len(h) for i, h in enumerate(head)]
    return "\n".join("  ".join(v.ljust(wd) for v, wd in zip(r, widths)).rstrip() for r in [head] + cells)


# The repository root (tools/bench/report.py is three levels below it), for `git rev-parse`.
_REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def environment(torch: Any = None, timer: str = "") -> dict[str, Any]:
    env: dict[str, Any] = {
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "python": platform.python_version(), "host": platform.node(), "timer": timer,
    }
    versions: dict[str, str | None] = {}
    for mod in ("fuser", "torch", "triton", "xdsl", "llvmlite", "cuda-python", "cuda-bindings", "numpy"):
        try:
            from importlib.metadata import version
            versions[mod] = version(mod)
        except Exception:
            versions[mod] = None
    if versions["fuser"] is None:  # run from a checkout that is not pip-installed
        try:
            import fuser
            versions["fuser"] = getattr(fuser, "__version__", None)
        except Exception:
            pass
    env["versions"] = versions
    try:
        env["fuser_git"] = subprocess.run(["git", "-C", _REPO_ROOT, "rev-parse", "--short", "HEAD"], capture_output=True,
                                          text=True, timeout=5).stdout.strip() or None
    except Exception:
        env["fuser_git"] = None
    if torch is not None:
        props = torch.cuda.get_device_properties(0)
        env["device"] = {"name": torch.cuda.get_device_name(0), "sms": props.multi_processor_count,
                         "memory_gib": round(props.total_memory / GiB, 1),
                         "capability": f"{props.major}.{props.minor}", "torch_cuda": torch.version.cuda}
    return env


def write_json(path: str, rows: Sequence[RowResult], env: dict[str, Any], args: dict[str, Any],
               copy_gbps: float | None) -> None:
    doc = {"env": env, "args": args, "copy_gbps": copy_gbps, "rows": [r.as_json() for r in rows]}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp{os.getpid()}"
    with open(tmp, "w") as f:  # rewritten after every row: a reader never sees half a file
        json.dump(doc, f, indent=2)
    os.replace(tmp, path)


def draw_png(path: str, rows: Sequence[RowResult], title: str, copy_gbps: float | None) -> str | None:
    """Grouped bars (fuser, eager, torch.compile) per workload, one panel per unit.

    Returns None on success, else why no chart was drawn.
    """
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as e:
        return f"matplotlib is not importable ({_short(e)}); pip install matplotlib to get --png"
    units = [u for u in ("GB/s", "TFLOP/s") if any(r.workload.unit == u for r in rows)]
    if not units:
        return "no rows to draw"
    fig, axes = plt.subplots(len(units), 1, squeeze=False,
                             figsize=(max(8.0, 0.75 * len(rows) + 2), 4.8 * len(units)))
    series = [("fuser", "fuser", "#2a7ab9"), ("eager", "torch eager", "#999999"), ("compile", "torch.compile", "#e0892b")]
    width = 0.27
    for ax, unit in zip(axes[:, 0], units):
        sel = [r for r in rows if r.workload.unit == unit]
        xs = range(len(sel))
        for k, (attr, label, color) in enumerate(series):
            vals = [getattr(r, attr).rate or 0.0 for r in sel]
            ax.bar([x + (k - 1) * width for x in xs], vals, width, label=label, color=color)
        for x, r in zip(xs, sel):
            if r.status in BAD_STATUSES or r.status == "unsupported":
                ax.text(x - width, 0, r.status, rotation=90, ha="center", va="bottom", fontsize=7, color="red")
        if unit == "GB/s" and copy_gbps:
            ax.axhline(copy_gbps, color="black", linestyle="--", linewidth=0.8, label=f"copy {copy_gbps:.0f} GB/s")
        ax.set_xticks(list(xs))
        ax.set_xticklabels([r.workload.name if r.workload.name.endswith(fmt_shape(r.shape))
                            else f"{r.workload.name}\n{fmt_shape(r.shape)}" for r in sel], rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(unit)
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0), frameon=False)  # off the bars
        ax.grid(axis="y", alpha=0.3)
    axes[0, 0].set_title(title, fontsize=10)
    fig.tight_layout()
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    fig.savefig(path, dpi=120, bbox_inches="tight")  # keeps the legend beside the panels
    plt.close(fig)
    return None
