"""Compile time and per-call time of xpu_lite (mode="lite") against aot_eager, eager and
Inductor, measured side by side in one process, dynamic=True.

    python benchmarks/bench_lite.py [--device cpu] [--no-inductor] [--no-training] [--rounds 3] [--write docs/benchmarks.md]

Cases: the demo's 4-layer transformer block and a 50-op pointwise chain, each at four
sizes, in inference; a custom op writing rows into a 64 MiB cache (a graph input it
mutates: `auto_functionalized_v2`, copies unless written in place); and a training step of
the block (forward, sum, backward). Compiles are timed in rounds, the backends taking
turns (a 0.3 s compile timed alone moves by a third with this shared machine's load), and
each call of a backend next to a call of eager. Ratios, not absolute times, are what carry
over between machines.
"""
from __future__ import annotations

import argparse
import datetime
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import xpu_lite  # noqa: E402,F401  (registers the backend)
from xpu_lite.demo import TransformerStack, side_by_side_seconds  # noqa: E402
from xpu_lite.report import append_section, format_table, markdown_table  # noqa: E402
from xpu_lite.runtime import device_or_usage_error  # noqa: E402


def pointwise_chain(x: torch.Tensor) -> torch.Tensor:
    for i in range(10):  # 5 ops a step, 50 in all
        x = torch.sin(x) * 1.01 + 0.1
        x = torch.relu(x) - 0.01 * i
    return x


@torch.library.custom_op("xpu_lite_bench::write_rows_", mutates_args=("cache",))
def write_rows_(cache: torch.Tensor, position: int, rows: torch.Tensor) -> None:
    """A KV-cache update as serving code writes one: rows stored into a preallocated cache."""
    cache[position:position + rows.shape[0]].copy_(rows)


@write_rows_.register_fake
def _(cache: torch.Tensor, position: int, rows: torch.Tensor) -> None:
    return None


def cache_update(cache: torch.Tensor) -> Callable[[torch.Tensor], torch.Tensor]:
    """One decoding step's cache write and a read of what it wrote: the cache (64 MiB) is
    a graph input the custom op mutates."""
    def step(rows: torch.Tensor) -> torch.Tensor:
        write_rows_(cache, 7, rows * 2)
        return cache[7:7 + rows.shape[0]].sum(0)
    return step


def training_step(model: torch.nn.Module) -> Callable[..., Callable[[torch.Tensor], None]]:
    """make(kwargs) -> one training step of `model` (compiled, or eager with kwargs None):
    gradients cleared, forward, sum, backward."""
    def make(kwargs: dict[str, Any] | None) -> Callable[[torch.Tensor], None]:
        forward = model if kwargs is None else torch.compile(model, dynamic=True, **kwargs)

        def step(x: torch.Tensor) -> None:
            for p in model.parameters():
                p.grad = None
            with torch.enable_grad():
                forward(x).sum().backward()
        return step
    return make


def inference(model: Callable[..., Any]) -> Callable[..., Callable[..., Any]]:
    return lambda kwargs: model if kwargs is None else torch.compile(model, dynamic=True, **kwargs)


Backends = list[tuple[str, dict[str, Any]]]  # (label, torch.compile's kwargs)


def compile_seconds(make: Callable[..., Callable[..., Any]], x: torch.Tensor, backends: Backends, rounds: int) -> dict[str, list[float]]:
    """First-call seconds (the compile) of each backend in each of `rounds` rounds, after one
    warm-up round that is not counted (the first compiles in a process also warm caches).
    The backends take turns within a round, in reverse order every other round, so that
    the machine's load hits them alike: the ratios to compare are those of one round."""
    seconds: dict[str, list[float]] = {label: [] for label, _ in backends}
    for turn in range(rounds + 1):
        for label, kwargs in backends if turn % 2 else backends[::-1]:
            torch._dynamo.reset()
            compiled = make(kwargs)
            start = time.perf_counter()
            compiled(x)
            if turn:
                seconds[label].append(time.perf_counter() - start)
    return seconds


def compile_ratios(seconds: dict[str, list[float]], reference: str = "aot_eager") -> dict[str, tuple[float, float, float]]:
    """Each backend's compile time over the reference's in the same round: (median, lowest,
    highest) over the rounds."""
    ratios = {label: [t / r for t, r in zip(times, seconds[reference])] for label, times in seconds.items()}
    return {label: (statistics.median(values), min(values), max(values)) for label, values in ratios.items()}


def measure(name: str, make: Callable[..., Callable[..., Any]], inputs: list[torch.Tensor], backends: Backends, repeat: int,
            rounds: int) -> list[tuple[str, ...]]:
    """Compile time (`compile_seconds`: the backends interleaved, median of `rounds`) and
    per-call time, each call of the backend next to a call of eager (interleaved, median of
    `repeat` per size): this machine is shared, so only side-by-side ratios mean much.
    `make(kwargs)` gives the function to time (kwargs for torch.compile; None: eager)."""
    model = make(None)
    start = time.perf_counter()
    seconds = compile_seconds(make, inputs[0], backends, rounds)
    ratios = compile_ratios(seconds)
    print(f"  {name}: {rounds} rounds of compiles (and one to warm up) in {time.perf_counter() - start:.1f} s", flush=True)
    rows = []
    for label, kwargs in backends:
        torch._dynamo.reset()
        compiled = make(kwargs)
        for x in inputs:
            compiled(x)
        pairs = [side_by_side_seconds([lambda x=x: model(x), lambda x=x: compiled(x)], repeat) for x in inputs]
        eager, per_call = (sum(column) for column in zip(*pairs))
        per_size = " ".join(f"{c / e:.2f}" for e, c in pairs)
        compile_s, (ratio, low, high) = statistics.median(seconds[label]), ratios[label]
        print(f"  {name:18s} {label:36s} compile {compile_s:6.2f} s, {ratio:.2f} ({low:.2f}-{high:.2f}) x aot_eager"
              f"   per-call {per_call * 1e3:8.3f} ms (eager {eager * 1e3:.3f} ms; per size {per_size})", flush=True)
        rows.append((name, label, f"{compile_s:.2f}", f"{ratio:.2f} ({low:.2f}-{high:.2f})", f"{per_call * 1e3:.3f}",
                     f"{per_call / eager:.2f}", per_size))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default=None)
    parser.add_argument("--no-inductor", action="store_true", help="skip Inductor (needs a C++ compiler on CPU; slow to compile)")
    parser.add_argument("--no-training", action="store_true", help="skip the training-step case")
    parser.add_argument("--repeat", type=int, default=200, help="interleaved calls per size (a quarter of it for training steps)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of compiles, the backends interleaved (after one round to warm up)")
    parser.add_argument("--write", default=None, help="append the table to this markdown file")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.repeat < 1:
        parser.error(f"--rounds and --repeat must be at least 1, not {args.rounds} and {args.repeat}")
    device = device_or_usage_error(parser, args.device)
    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    # Dynamo's own `eager` backend runs the captured FX graph with the same Python bindings as
    # eager, no AOTAutograd and no wrapper: the floor of any backend that runs the ops one at a
    # time, as lite mode with no regions must.
    backends: Backends = [
        ("Dynamo floor (eager backend)", {"backend": "eager"}),
        ("aot_eager", {"backend": "aot_eager"}),
        ("xpu_lite (lite)", {"backend": "xpu_lite", "mode": "lite"}),
        ("xpu_lite (lite, reuse_buffers=False)", {"backend": "xpu_lite", "options": {"mode": "lite", "reuse_buffers": False}}),
        ("xpu_lite (lite, eager_bindings=True)", {"backend": "xpu_lite", "options": {"mode": "lite", "eager_bindings": True}}),
    ]
    if not args.no_inductor:
        backends.append(("inductor", {"backend": "inductor"}))
    # On cpu a compiled region runs under the Triton interpreter; the per-call target is about
    # the wrapper (lite mode with no regions is all fallbacks), so cpu measures the block
    # without its region. On a GPU the block keeps its region.
    block = TransformerStack(region=device.type != "cpu").to(device).eval()
    sizes = [torch.randn(b, s, 64, device=device) for b, s in ((2, 8), (3, 16), (4, 32), (5, 24))]
    no_region = " (no region)" if device.type == "cpu" else ""
    cases = [
        ("transformer block" + no_region, inference(block), sizes, args.repeat),
        ("50-op pointwise", inference(pointwise_chain), [torch.randn(n, device=device) for n in (1000, 3000, 10000, 30000)], args.repeat),
        ("custom-op cache write", inference(cache_update(torch.zeros(16384, 1024, device=device))),
         [torch.randn(n, 1024, device=device) for n in (1, 2, 4, 8)], max(args.repeat // 4, 5)),
    ]
    if not args.no_training:  # not a target of the issue: what a training step costs, for users
        trained = TransformerStack(region=device.type != "cpu").to(device)
        cases.append(("block training step" + no_region, training_step(trained), sizes, max(args.repeat // 4, 5)))
    rows: list[tuple[str, ...]] = []
    for name, make, inputs, repeat in cases:
        rows += measure(name, make, inputs, backends, repeat, args.rounds)
    header = ("case", "backend", "compile s (median)", "compile / aot_eager (range)", "per-call ms", "per-call / eager",
              "per size / eager")
    table = format_table(header, rows)
    print("\n" + table)
    if args.write:
        stamp = f"{datetime.date.today().isoformat()}, device {device}, torch {torch.__version__}, {platform.machine()} {torch.get_num_threads()} threads"
        append_section(args.write, f"bench_lite.py — {stamp}", markdown_table(header, rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
