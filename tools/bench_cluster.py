"""Time the matmul with and without 2-CTA clusters (matmul_cluster=1 vs 2) against torch, one
process: `python tools/bench_cluster.py` on a GPU machine (triton do_bench, median)."""
import torch
from triton.testing import do_bench

from fuser import api

from fuser.tools.bench import matmul as workload

rows = []
for m, n, k in [(8192, 8192, 8192), (4096, 4096, 4096), (2048, 2048, 8192)]:
    a = (torch.randn(m, k, device="cuda") / k ** 0.5).to(torch.bfloat16)
    b = torch.randn(k, n, device="cuda").to(torch.bfloat16)
    ref = a.float() @ b.float()
    text = workload("none", (m, n, k), (m, n, k)).mlir((m, n, k), "bf16")  # bf16 out, as fuser-bench
    fl = 2 * m * n * k
    t_t = do_bench(lambda: a @ b, warmup=50, rep=300, return_mode="median")
    res = {}
    for cl in (1, 2, "2 sms=120", 1, 2):
        kern = api.compile(text, pipeline=f"canonicalize,convert-fusion-to-sched{{matmul_cluster={cl}}},cse,convert-sched-to-nvvm,cse")
        out = kern(a, b)
        err = float((out.float() - ref).norm() / ref.norm())
        assert err < 5e-3, err
        t = do_bench(lambda: kern(a, b), warmup=50, rep=300, return_mode="median")
        res.setdefault(cl, []).append(fl / t / 1e9)
    rows.append((f"{m}x{n}x{k}", res[1], res[2] + res["2 sms=120"], fl / t_t / 1e9))
print(f"{'shape':>16} {'no cluster TF/s':>18} {'cluster=2 TF/s (,120 SMs)':>26} {'torch TF/s':>10} {'cl/no':>6}")
for r in rows:
    print(f"{r[0]:>16} {' / '.join(f'{x:.0f}' for x in r[1]):>18} {' / '.join(f'{x:.0f}' for x in r[2]):>26} "
          f"{r[3]:10.0f} {max(r[2]) / max(r[1]):6.3f}")
