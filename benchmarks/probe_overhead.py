"""Where lite mode's per-call time goes, layer by layer, in one process:

1. one aten call: eager `x + 1` vs `torch.ops.aten.add.Tensor(x, 1)` vs `OpOverload._op`;
2. a compiled model: eager, the generated wrapper called directly, the function
   AOTAutograd returns (wrapper + its runtime wrapper), and the full torch.compile call
   (+ Dynamo's guards), each timed in alternating rounds;
3. Dynamo's own floor: a one-op function and the chain, plain and under Dynamo's `eager`
   backend, aot_eager and xpu_lite (with and without `reuse_buffers`), calls interleaved.

    python benchmarks/probe_overhead.py [--write docs/benchmarks.md]
"""
from __future__ import annotations

import argparse
import datetime
import sys
import time
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import xpu_lite.backend as backend  # noqa: E402
from xpu_lite.demo import TransformerStack, side_by_side_seconds  # noqa: E402
from xpu_lite.report import format_table  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lite import pointwise_chain  # noqa: E402


def op_call_costs() -> list[tuple[str, str]]:
    x = torch.randn(4, 4)
    op = torch.ops.aten.add.Tensor
    raw = op._op
    calls = {
        "eager x + 1": lambda: x + 1,
        "torch.ops.aten.add.Tensor(x, 1)": lambda: torch.ops.aten.add.Tensor(x, 1),
        "OpOverload._op(x, 1)": lambda: raw(x, 1),
    }
    n = 100_000
    return [(name, f"{min(timeit.repeat(fn, number=n, repeat=3)) / n * 1e6:.2f}") for name, fn in calls.items()]


def best_us(fn: Callable[[], Any], n: int = 200) -> float:
    for _ in range(20):
        fn()
    start = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - start) / n * 1e6


def layers(name: str, model: Callable[..., Any], x: torch.Tensor) -> tuple[str, ...]:
    captured: dict[str, Any] = {}
    load, compile_fx = backend.load_wrapper, backend.compile_fx

    def spy_load(code: Any) -> Any:
        fn = load(code)

        def wrapper(args: list[Any]) -> Any:
            captured["wrapper"], captured["wrapper_args"] = fn, list(args)
            return fn(args)

        wrapper._boxed_call = True
        return wrapper

    def spy_compile(gm: Any, example_inputs: Any, config: Any) -> Any:
        fn = compile_fx(gm, example_inputs, config)

        def aot(*args: Any) -> Any:
            captured["aot"], captured["aot_args"] = fn, args
            return fn(*args)

        return aot

    backend.load_wrapper, backend.compile_fx = spy_load, spy_compile
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)
        compiled(x)
    finally:
        backend.load_wrapper, backend.compile_fx = load, compile_fx
    wrapper, wargs, aot, aargs = captured["wrapper"], captured["wrapper_args"], captured["aot"], captured["aot_args"]
    rounds: dict[str, list[float]] = {"eager": [], "wrapper": [], "aot": [], "full": []}
    for _ in range(5):
        rounds["eager"].append(best_us(lambda: model(x)))
        rounds["wrapper"].append(best_us(lambda: wrapper(list(wargs))))
        rounds["aot"].append(best_us(lambda: aot(*aargs)))
        rounds["full"].append(best_us(lambda: compiled(x)))
    med = {k: sorted(v)[2] for k, v in rounds.items()}
    return (name, *(f"{med[k]:.0f}" for k in ("eager", "wrapper", "aot", "full")))


BACKENDS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("Dynamo + eager backend", {"backend": "eager"}),
    ("aot_eager", {"backend": "aot_eager"}),
    ("xpu_lite lite", {"backend": "xpu_lite", "mode": "lite"}),
    ("xpu_lite lite, reuse_buffers=False", {"backend": "xpu_lite", "options": {"mode": "lite", "reuse_buffers": False}}),
)


def one_op(x: torch.Tensor) -> torch.Tensor:
    return x + 1


def backend_floor(name: str, fn: Callable[..., Any], x: torch.Tensor) -> tuple[str, ...]:
    """Per-call µs of `fn` plain and under each backend, the calls interleaved (median of
    1000): Dynamo's own cost is the `eager` backend's (torch-level calls, no AOTAutograd)."""
    calls = [lambda: fn(x)]
    for _, kwargs in BACKENDS:
        torch._dynamo.reset()
        compiled = torch.compile(fn, dynamic=True, **kwargs)
        compiled(x)
        calls.append(lambda compiled=compiled: compiled(x))
    return (name, *(f"{t * 1e6:.1f}" for t in side_by_side_seconds(calls, 1000)))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", default=None)
    args = parser.parse_args()
    torch.manual_seed(0)
    torch.set_grad_enabled(False)
    ops = op_call_costs()
    rows = [
        layers("transformer block (2, 8), no region", TransformerStack(region=False).eval(), torch.randn(2, 8, 64)),
        layers("50-op pointwise (1000)", pointwise_chain, torch.randn(1000)),
    ]
    floors = [backend_floor("x + 1 (1000)", one_op, torch.randn(1000)), backend_floor("50-op pointwise (1000)", pointwise_chain, torch.randn(1000))]
    t1 = format_table(("one aten call", "µs"), ops)
    header = ("model", "eager µs", "wrapper only µs", "+ AOT runtime µs", "torch.compile call µs")
    t2 = format_table(header, rows)
    header3 = ("function", "plain µs", *(f"{name} µs" for name, _ in BACKENDS))
    t3 = format_table(header3, floors)
    print(t1 + "\n\n" + t2 + "\n\n" + t3)
    if args.write:
        md = ["", f"### probe_overhead.py — {datetime.date.today().isoformat()}, device cpu, torch {torch.__version__}", ""]
        md += ["| one aten call | µs |", "|---|---|"] + [f"| `{a}` | {b} |" for a, b in ops] + [""]
        md += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)] + ["| " + " | ".join(r) + " |" for r in rows] + [""]
        md += ["| " + " | ".join(header3) + " |", "|" + "---|" * len(header3)] + ["| " + " | ".join(r) + " |" for r in floors]
        with open(args.write, "a") as fh:
            fh.write("\n".join(md) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
