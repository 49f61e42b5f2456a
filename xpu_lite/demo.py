"""`python -m xpu_lite demo`: a 4-layer transformer block, compiled in lite and default mode
on the best device, run over several (batch, seq) sizes; prints what was compiled, what
fell back and why, recompiles, error against eager and timings.
"""
from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Sequence
from typing import Any

import torch
import torch.nn.functional as F

from .config import parse_config
from .decomp import compile_region
from .report import COUNTERS, ExplainReport, capture, format_table
from .runtime import resolve_device

SIZES: tuple[tuple[int, int], ...] = ((2, 8), (3, 16), (4, 32), (5, 24))  # no 1: Dynamo specialises size 1


class Block(torch.nn.Module):
    """Pre-norm attention + MLP; the MLP activation is the one annotated compile region."""

    def __init__(self, dim: int, heads: int, region: bool = True) -> None:
        super().__init__()
        self.heads, self.region = heads, region
        self.norm1 = torch.nn.LayerNorm(dim)
        self.qkv = torch.nn.Linear(dim, 3 * dim)
        self.proj = torch.nn.Linear(dim, dim)
        self.norm2 = torch.nn.LayerNorm(dim)
        self.up = torch.nn.Linear(dim, 4 * dim)
        self.down = torch.nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, s, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        att = torch.softmax(q @ k.transpose(-2, -1) * (d // self.heads) ** -0.5, dim=-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, s, d))
        h = self.up(self.norm2(x))
        with compile_region() if self.region else contextlib.nullcontext():
            h = F.gelu(h) * torch.sigmoid(h)
        return x + self.down(h)


class TransformerStack(torch.nn.Module):
    def __init__(self, dim: int = 64, heads: int = 4, layers: int = 4, region: bool = True) -> None:
        super().__init__()
        self.layers = torch.nn.ModuleList(Block(dim, heads, region) for _ in range(layers))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for layer in self.layers:
            x = layer(x)
        return x


def side_by_side_seconds(fns: Sequence[Callable[[], Any]], repeat: int = 20) -> list[float]:
    """Median seconds per call of each function, the calls interleaved (a, b, a, b, ...) so
    that changes in the machine's load hit every function alike."""
    for fn in fns:
        fn()
    samples: list[list[float]] = [[] for _ in fns]
    for _ in range(repeat):
        for fn, times in zip(fns, samples):
            start = time.perf_counter()
            fn()
            times.append(time.perf_counter() - start)
    return [sorted(times)[len(times) // 2] for times in samples]


# timed calls per size, each next to one of eager: on cpu the kernels run under the Triton
# interpreter (~1 ms a program), whose times mean nothing, and 20 of its calls were a third of the demo
REPEAT = {"cpu": 3}


def run_mode(model: torch.nn.Module, device: torch.device, mode: str | None, sizes: tuple[tuple[int, int], ...]) -> dict[str, Any]:
    parse_config(mode)  # fail early on a bad mode
    torch._dynamo.reset()
    compiled = torch.compile(model, backend="xpu_lite", mode=mode, dynamic=True)
    inputs = [torch.randn(b, s, 64, device=device) for b, s in sizes]
    COUNTERS.reset()
    with torch.no_grad(), capture() as reports:
        start = time.perf_counter()
        compiled(inputs[0])
        compile_s = time.perf_counter() - start
        results = [(compiled(x), model(x)) for x in inputs]
        max_err = max((got - expected).abs().max().item() for got, expected in results)
        bitwise = all(torch.equal(got, expected) for got, expected in results)
        repeat = REPEAT.get(device.type, 20)
        pairs = [side_by_side_seconds([lambda x=x: model(x), lambda x=x: compiled(x)], repeat) for x in inputs]
        eager_s, compiled_s = (sum(column) for column in zip(*pairs))
    forward = [r for r in reports if r.kind != "backward"]
    return {
        "mode": mode or "default",
        "report": ExplainReport(tuple(reports)),
        "graphs": len(forward),
        "recompiles": max(0, len(forward) - 1),
        "compile_s": compile_s,
        "kernels": COUNTERS.kernels_compiled,
        "max_err": max_err,
        "bitwise": bitwise,
        "eager_s": eager_s,
        "compiled_s": compiled_s,
        "repeat": repeat,
    }


def main(device: str | None = None, sizes: tuple[tuple[int, int], ...] = SIZES) -> int:
    dev = resolve_device(device)
    torch.manual_seed(0)
    model = TransformerStack().to(dev).eval()
    print(f"xpu_lite demo: 4-layer transformer block, dim 64, device {dev} (torch {torch.__version__})")
    print(f"input sizes (batch, seq): {', '.join(map(str, sizes))}, dynamic=True\n")
    rows = []
    for mode in ("lite", None):
        result = run_mode(model, dev, mode, sizes)
        print(f"== mode={result['mode']}: decisions (nodes per decision and reason)")
        for key, count in result["report"].summary().items():
            print(f"   {count:5d}  {key}")
        print()
        rows.append(
            (
                result["mode"],
                str(result["graphs"]),
                str(result["recompiles"]),
                str(result["kernels"]),
                f"{result['compile_s']:.2f}",
                f"{result['max_err']:.2e}" + (" (bitwise)" if result["bitwise"] else ""),
                f"{result['eager_s'] * 1e3:.2f}",
                f"{result['compiled_s'] * 1e3:.2f}",
                f"{result['compiled_s'] / result['eager_s']:.2f}",
            )
        )
    header = ("mode", "graphs", "recompiles", "kernels", "compile s", "max |err| vs eager", "eager ms", "xpu_lite ms", "ratio")
    print(format_table(header, rows))
    print(f"\n(ms: median of {result['repeat']} timed calls a size, summed over the input sizes; "
          "kernels: Triton kernels compiled, one source for all sizes)")
    if dev.type == "cpu":
        print("(on cpu the kernels run under the Triton interpreter: numerics only, timings are not meaningful)")
    return 0
