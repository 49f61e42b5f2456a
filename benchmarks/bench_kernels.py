"""Fused pointwise, view-heavy, head-merging, rotary (real and complex), transposing (tiled), pooling and flex attention kernels
(default mode, dynamic=True):
kernels per graph and per-call time against eager, aot_eager and Inductor, side by side in
one process.

    python benchmarks/bench_kernels.py [--device cpu|cuda|xpu] [--no-inductor] [--only TEXT] [--write docs/benchmarks.md]

On a GPU it also reports achieved bandwidth (bytes read + written per call / time) as a
fraction of the measured device copy bandwidth, and throughput relative to Inductor. On
the CPU, xpu_lite's kernels run under the Triton interpreter: those timings show the
interpreter's cost, not what the kernels do on a GPU.
"""
from __future__ import annotations

import argparse
import datetime
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import xpu_lite  # noqa: E402
from xpu_lite.report import append_section, format_table, markdown_table  # noqa: E402
from xpu_lite.runtime import device_or_usage_error  # noqa: E402


def pointwise_chain(x: torch.Tensor) -> torch.Tensor:
    for i in range(10):  # 50 ops
        x = torch.sin(x) * 1.01 + 0.1
        x = torch.relu(x) - 0.01 * i
    return x


def view_heavy(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    a = x.permute(0, 2, 1)[:, ::2] * y.unsqueeze(1)  # strided + broadcast reads
    b = torch.sigmoid(a) + a.transpose(1, 2).transpose(1, 2)
    return (b * 2 - 1).relu()


def head_merge(o: torch.Tensor, r: torch.Tensor) -> torch.Tensor:
    """Attention's heads merged and a residual added: the copy joins the add's kernel
    through the reshape (one kernel since 2026-11-29; its loads are contiguous along d)."""
    b, h, t, d = o.shape
    return o.transpose(1, 2).reshape(b, t, h * d) + r


def rotary_merge(q: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotary embeddings, then the heads merged: the rotated value is computed where the
    merge's copy reads it through the transpose, never stored (one kernel since the second
    session of 2026-11-29, two and a buffer between before)."""
    b, h, t, d = q.shape
    q1, q2 = q.chunk(2, -1)
    y = q * cos + torch.cat((-q2, q1), -1) * sin
    return y.transpose(1, 2).reshape(b, t, h * d)


def nhwc_to_nchw(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 3, 1, 2).contiguous()  # a tiled copy: reads along C, writes along H*W


def pooling_windows(x: torch.Tensor) -> torch.Tensor:
    """A ResNet stem's max pool and an avg pool (unrolled windows, pooling.py)."""
    return F.max_pool2d(x, 3, 2, 1) + F.avg_pool2d(x, 3, 2, 1)


def adaptive_pools(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """A classifier head's adaptive pools to 7 x 7 (window reductions, adaptive.py): the
    average adds in eager's order (RBLOCK 1), the max in one block."""
    return F.adaptive_avg_pool2d(x, 7), F.adaptive_max_pool2d(x, 7)


def _softcap_causal(score, b, h, q_idx, kv_idx):
    return torch.where(q_idx >= kv_idx, 30 * torch.tanh(score / 30), -float("inf"))


def flex_attention(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """flex attention's forward, a causal soft-capped score_mod (one kernel of its own:
    codegen/flex_attention.py); eager's op is the dense math."""
    from torch.nn.attention.flex_attention import flex_attention as flex

    return flex(q, k, v, score_mod=_softcap_causal)


def _softcap(score, b, h, q_idx, kv_idx):
    return 30 * torch.tanh(score / 30)


def flex_decode(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    """One query row against a long cache, soft-capped: decoding's flex attention (on a GPU
    xpu_lite splits the keys among programs, and Inductor has a decoding kernel)."""
    from torch.nn.attention.flex_attention import flex_attention as flex

    return flex(q, k, v, score_mod=_softcap)


def _window(b, h, q_idx, kv_idx):
    return (kv_idx <= q_idx) & (q_idx - kv_idx < 256)


def flex_window(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: Any) -> torch.Tensor:
    """flex attention's forward with a causal sliding window of 256 keys, its block mask made
    outside the function (as users make it): xpu_lite's and Inductor's kernels visit the key
    blocks it lists; eager's op, the dense math, computes every score."""
    from torch.nn.attention.flex_attention import flex_attention as flex

    return flex(q, k, v, block_mask=mask)


def _window_inputs(device: torch.device, gpu: bool) -> list[tuple[Any, ...]]:
    from torch.nn.attention.flex_attention import create_block_mask

    cases = []
    for m in (1, 2, 3, 4):
        shape = (4, 16, 512 * m, 64) if gpu else (1, 2, 48 * m, 16)
        q, k, v = (torch.randn(*shape, device=device, dtype=torch.bfloat16 if gpu else torch.float32) for _ in range(3))
        blocks = 128 if gpu else (16, 32)  # on cpu, blocks the interpreter's kernel (16 x 32) tiles
        cases.append((q, k, v, create_block_mask(_window, None, None, shape[2], shape[2], device=device.type, BLOCK_SIZE=blocks)))
    return cases


def sync(device: torch.device) -> None:
    if device.type in ("cuda", "xpu"):
        getattr(torch, device.type).synchronize()


def timed(fn: Callable[[], Any], device: torch.device, repeat: int) -> float:
    fn()
    sync(device)
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        sync(device)
        samples.append(time.perf_counter() - start)
    return sorted(samples)[len(samples) // 2]


def copy_bandwidth(device: torch.device) -> float:
    x = torch.empty(64 * 1024 * 1024 // 4, device=device)
    y = torch.empty_like(x)
    seconds = timed(lambda: y.copy_(x), device, 20)
    return 2 * x.numel() * 4 / seconds


def complex_rotary(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """torchtitan's rotary embedding: complex64 products of view_as_complex(x.float()) and
    freqs_cis, back to x's dtype. Inductor runs the complex product eagerly; xpu_lite
    computes it on float pairs (decomp/complex_mul.py, since 2026-12-01)."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs = freqs_cis[: x.shape[1]].view(1, x.shape[1], 1, xc.shape[-1])
    return torch.view_as_real(xc * freqs).flatten(3).type_as(x)


def _complex_rotary_inputs(device: torch.device, gpu: bool) -> list[tuple[torch.Tensor, torch.Tensor]]:
    """(x, freqs_cis): bfloat16 (batch 8, 16 heads of 128) on a GPU, float32 on cpu."""
    b, h, d, dtype = (8, 16, 128, torch.bfloat16) if gpu else (2, 3, 8, torch.float32)
    inputs = []
    for m in (1, 2, 3, 4):
        seq = 256 * m if gpu else 6 * m  # (no length equal to another dim: one symbol each)
        freqs_cis = torch.polar(torch.ones(seq, d // 2, device=device), torch.randn(seq, d // 2, device=device))
        inputs.append((torch.randn(b, seq, h, d, device=device).to(dtype), freqs_cis))
    return inputs


def nbytes(args: tuple[torch.Tensor, ...], out: torch.Tensor | tuple[torch.Tensor, ...]) -> int:
    outs = out if isinstance(out, tuple) else (out,)
    return sum(t.numel() * t.element_size() for t in (*args, *outs) if isinstance(t, torch.Tensor))  # not a block mask


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--repeat", type=int, default=20)
    parser.add_argument("--write", default=None)
    parser.add_argument("--only", default=None, metavar="TEXT", help="the cases whose name contains TEXT")
    args = parser.parse_args()
    device = device_or_usage_error(parser, args.device)
    gpu = device.type != "cpu"
    torch.set_grad_enabled(False)
    scale = 1024 if gpu else 1
    dtype = torch.bfloat16 if gpu else torch.float32  # flex decode's
    batch = 1024 if gpu else 4  # view-heavy: 0.4M to 3M elements on a GPU (not launch-bound)
    cases = [
        ("50-op pointwise", pointwise_chain, [(torch.randn(n * scale, device=device),) for n in (1000, 3000, 10000, 30000)]),
        ("view-heavy", view_heavy, [(torch.randn(batch, 16 * m, 24, device=device), torch.randn(batch, 16 * m, device=device))
                                    for m in (1, 2, 4, 8)]),
        ("head merge + residual", head_merge,
         [(torch.randn(*((8, 16, 256 * m, 64) if gpu else (2, 3, 8 * m, 4)), device=device),
           torch.randn(*((8, 256 * m, 1024) if gpu else (2, 8 * m, 12)), device=device)) for m in (1, 2, 3, 4)]),
        ("rotary + head merge", rotary_merge,
         [tuple(torch.randn(*shape, device=device) for shape in (((8, 16, 256 * m, 64), (256 * m, 64), (256 * m, 64)) if gpu else
                                                                 ((2, 3, 8 * m, 4), (8 * m, 4), (8 * m, 4)))) for m in (1, 2, 3, 4)]),
        ("complex rotary", complex_rotary, _complex_rotary_inputs(device, gpu)),
        ("NHWC to NCHW copy", nhwc_to_nchw, [(torch.randn(*((16, 24 * m, 64, 128) if gpu else (3, 12 * m, 10, 20)), device=device),)
                                             for m in (1, 2, 4, 8)]),
        ("pooling windows", pooling_windows, [(torch.randn(*((32, 64, 28 * m, 28 * m) if gpu else (2, 4, 7 * m, 7 * m)),
                                                           device=device),) for m in (1, 2, 3, 4)]),
        ("adaptive pools", adaptive_pools, [(torch.randn(*((32, 512, 7 * m + 3, 7 * m + 3) if gpu else (2, 4, 7 * m + 3, 7 * m + 3)),
                                                         device=device),) for m in (1, 2, 3, 4)]),
        ("flex attention", flex_attention, [tuple(torch.randn(*((4, 16, 256 * m, 64) if gpu else (1, 2, 24 * m, 16)), device=device,
                                                              dtype=torch.bfloat16 if gpu else torch.float32) for _ in range(3))
                                            for m in (1, 2, 3, 4)]),
        ("flex window", flex_window, _window_inputs(device, gpu)),
        ("flex decode", flex_decode, [(torch.randn(*((4, 16, 1, 64) if gpu else (1, 2, 1, 16)), device=device, dtype=dtype),
                                          *(torch.randn(*((4, 16, 2048 * m, 64) if gpu else (1, 2, 64 * m, 16)), device=device,
                                                        dtype=dtype) for _ in range(2)))
                                         for m in (1, 2, 3, 4)]),
    ]
    cases = [case for case in cases if args.only is None or args.only in case[0]]
    backends = [("aot_eager", None), ("xpu_lite", None)] + ([] if args.no_inductor else [("inductor", None)])
    copy_bw = copy_bandwidth(device) if gpu else None
    rows = []
    for name, fn, inputs in cases:
        eager = sum(timed(lambda a=a: fn(*a), device, args.repeat) for a in inputs)
        times: dict[str, float] = {}
        kernels = "-"
        for backend, mode in backends:
            torch._dynamo.reset()
            xpu_lite.reset_counters()
            compiled = torch.compile(fn, backend=backend, mode=mode, dynamic=True)
            times[backend] = sum(timed(lambda a=a: compiled(*a), device, args.repeat) for a in inputs)
            if backend == "xpu_lite":
                kernels = f"{xpu_lite.counters.kernels_compiled}/{xpu_lite.counters.forward_graphs}"
            print(f"  {name:16s} {backend:10s} {times[backend] * 1e3:9.3f} ms (eager {eager * 1e3:.3f} ms)", flush=True)
        row = [name, kernels, f"{times['xpu_lite'] * 1e3:.3f}", f"{times['xpu_lite'] / eager:.2f}",
               f"{times['xpu_lite'] / times['aot_eager']:.2f}"]
        row.append(f"{times['inductor'] / times['xpu_lite']:.2f}" if "inductor" in times else "-")
        if copy_bw:
            moved = sum(nbytes(a, fn(*a)) for a in inputs)
            row.append(f"{moved / times['xpu_lite'] / copy_bw:.2f}")
        rows.append(tuple(row))
    header = ("case", "kernels/graph", "xpu_lite ms", "/ eager", "/ aot_eager", "Inductor throughput ratio")
    header += ("fraction of copy bandwidth",) if copy_bw else ()
    table = format_table(header, rows)
    print("\n" + table)
    print("\n(times: median per call summed over four sizes; 'Inductor throughput ratio' = Inductor time / xpu_lite time, ≥ 0.9 is the GPU target)")
    if args.write:
        stamp = f"{datetime.date.today().isoformat()}, device {device}, torch {torch.__version__}"
        md = markdown_table(header, rows)
        if not gpu:
            md += ["", "On cpu xpu_lite's kernels run under the Triton interpreter (numpy per block): these ratios measure the interpreter, not generated GPU code."]
        append_section(args.write, f"bench_kernels.py — {stamp}", md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
