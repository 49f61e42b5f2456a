"""Reductions: softmax, layer_norm, rms_norm and a cross-entropy loss over row lengths
64 ... 32768 (default mode, dynamic=True: one compilation per op for every length).
Kernels per op and per-call time of xpu_lite and Inductor (default) relative to eager,
measured side by side in one process.

    python benchmarks/bench_reductions.py [--device cpu|cuda|xpu] [--rows 32] [--no-inductor]
                                          [--write docs/benchmarks.md] [--plot docs/bench_reductions_cpu.png]

On a GPU it also reports achieved bandwidth (bytes read + written / time) as a fraction
of the measured copy bandwidth, and Inductor's time / xpu_lite's (target >= 0.9 at every
length). On the CPU, xpu_lite's kernels run under the Triton interpreter: the ratios show
the interpreter's cost, not generated GPU code. The plot needs matplotlib
(`.venv/bin/pip install matplotlib`); without it the table is still printed.
"""
from __future__ import annotations

import argparse
import datetime
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import xpu_lite  # noqa: E402
from bench_kernels import copy_bandwidth, timed  # noqa: E402
from xpu_lite.report import append_section, format_table, markdown_table  # noqa: E402
from xpu_lite.runtime import PERSISTENT_MAX, device_or_usage_error  # noqa: E402


def softmax(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return torch.softmax(x, -1)


def layer_norm(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return F.layer_norm(x, x.shape[-1:], w, w)


def rms_norm(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return F.rms_norm(x, x.shape[-1:], w, 1e-6)


def cross_entropy(x: torch.Tensor, w: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    return F.cross_entropy(x, t)


OPS = {"softmax": softmax, "layer_norm": layer_norm, "rms_norm": rms_norm, "cross_entropy": cross_entropy}
LENGTHS = (64, 256, 1024, 4096, 32768)


def inputs(rows: int, length: int, device: torch.device) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return (torch.randn(rows, length, device=device), torch.randn(length, device=device),
            torch.randint(0, length, (rows,), device=device))


def nbytes(args: tuple[torch.Tensor, ...], out: torch.Tensor, op: str) -> int:
    read = args[0].numel() * args[0].element_size() + (args[1].numel() * 4 if op in ("layer_norm", "rms_norm") else 0)
    return read + out.numel() * out.element_size()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--rows", type=int, default=None, help="rows per call (default: 32 on cpu, 4096 on a GPU)")
    parser.add_argument("--repeat", type=int, default=None)
    parser.add_argument("--no-inductor", action="store_true")
    parser.add_argument("--write", default=None)
    parser.add_argument("--plot", default=None)
    args = parser.parse_args()
    device = device_or_usage_error(parser, args.device)
    gpu = device.type != "cpu"
    rows = args.rows or (4096 if gpu else 32)
    repeat = args.repeat or (50 if gpu else 3)
    torch.set_grad_enabled(False)
    copy_bw = copy_bandwidth(device) if gpu else None
    backends = ["xpu_lite"] + ([] if args.no_inductor else ["inductor"])
    table: list[tuple[str, ...]] = []
    series: dict[tuple[str, str], list[float]] = {}
    for op, fn in OPS.items():
        compiled = {}
        for backend in backends:
            torch._dynamo.reset()
            compiled[backend] = torch.compile(fn, backend=backend, dynamic=True)
        xpu_lite.reset_counters()
        for length in LENGTHS:
            a = inputs(rows, length, device)
            eager = timed(lambda: fn(*a), device, repeat)
            times = {b: timed(lambda b=b: compiled[b](*a), device, repeat) for b in backends}
            strategy = "persistent" if length <= PERSISTENT_MAX["cpu" if not gpu else "gpu"] else "looped"
            row = [op, str(length), strategy, f"{eager * 1e3:.3f}", f"{times['xpu_lite'] / eager:.2f}"]
            series.setdefault((op, "xpu_lite"), []).append(times["xpu_lite"] / eager)
            if "inductor" in times:
                row += [f"{times['inductor'] / eager:.2f}", f"{times['inductor'] / times['xpu_lite']:.2f}"]
                series.setdefault((op, "inductor"), []).append(times["inductor"] / eager)
            if copy_bw:
                row.append(f"{nbytes(a, fn(*a), op) / times['xpu_lite'] / copy_bw:.2f}")
            table.append(tuple(row))
            print("  " + "  ".join(row), flush=True)
        kernels = f"{xpu_lite.counters.kernels_compiled}/{xpu_lite.counters.forward_graphs}"
        table = [r if r[0] != op else (f"{op} ({kernels})", *r[1:]) for r in table]
    header = ("op (kernels/graph)", "row length", "strategy", "eager ms", "xpu_lite / eager")
    if not args.no_inductor:
        header += ("inductor / eager", "Inductor throughput ratio")
    header += ("fraction of copy bandwidth",) if copy_bw else ()
    print("\n" + format_table(header, table))
    print(f"\n({rows} rows per call; ratios of median per-call times; 'Inductor throughput ratio' = Inductor time / "
          "xpu_lite time, >= 0.9 is the GPU target)")
    if args.plot:
        _plot(series, device, rows, args.plot)
    if args.write:
        stamp = f"{datetime.date.today().isoformat()}, device {device}, torch {torch.__version__}, {rows} rows"
        md = markdown_table(header, table)
        if args.plot:
            md += ["", f"![per-call time relative to eager]({Path(args.plot).name})"]
        append_section(args.write, f"bench_reductions.py — {stamp}", md)
    return 0


def _plot(series: dict[tuple[str, str], list[float]], device: torch.device, rows: int, path: str) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no plot: matplotlib is not installed; `.venv/bin/pip install matplotlib`)")
        return
    fig, ax = plt.subplots(figsize=(7, 4.5))
    colors = {op: f"C{i}" for i, op in enumerate(OPS)}
    for (op, backend), ratios in sorted(series.items()):
        ax.plot(LENGTHS, ratios, marker="o", color=colors[op], linestyle="-" if backend == "xpu_lite" else "--",
                label=f"{op} {backend}")
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    ax.axhline(1.0, color="grey", linewidth=0.8)
    ax.set_xlabel("row length")
    ax.set_ylabel("per-call time / eager (lower is faster)")
    ax.set_title(f"Reductions on {device}, {rows} rows, dynamic=True")
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    print(f"plot written to {path}")


if __name__ == "__main__":
    sys.exit(main())
