"""Where lite mode's per-call time goes, layer by layer, in one process:

1. one aten call: eager's binding (`x + 1`, `y.view(...)`) vs the boxed
   `torch.ops.aten.add.Tensor(x, 1)` the wrapper emits vs `OpOverload._op`, for ops of the block;
2. a compiled model: eager, Dynamo's captured FX graph called directly (torch-level calls,
   the same Python bindings eager uses), the generated wrapper called directly (aten
   overloads, boxed), the function AOTAutograd returns (wrapper + its runtime wrapper), and
   the full torch.compile call (+ Dynamo's guards), each timed in alternating rounds;
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
from xpu_lite.report import append_section, format_table, markdown_table  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lite import pointwise_chain  # noqa: E402


def op_call_costs() -> list[tuple[str, ...]]:
    """Per call, µs: eager's Python binding, the boxed `torch.ops.aten.X.Y(...)` the wrapper
    emits, and the C++ function inside that OpOverload (`_op`), for ops of the demo block at
    its (2, 8) size and an add on (4, 4)."""
    aten = torch.ops.aten
    x, small = torch.randn(2, 8, 64), torch.randn(4, 4)
    w, b = torch.randn(192, 64), torch.randn(192)
    y = torch.nn.functional.linear(x, w, b)
    a = torch.randn(2, 4, 8, 8)
    cases: list[tuple[str, Callable[[], Any], Any, tuple[Any, ...]]] = [
        ("add.Tensor (4, 4) + 1", lambda: small + 1, aten.add.Tensor, (small, 1)),
        ("view.default", lambda: y.view(2, 8, 3, 4, 16), aten.view.default, (y, [2, 8, 3, 4, 16])),
        ("transpose.int", lambda: a.transpose(-2, -1), aten.transpose.int, (a, -2, -1)),
        ("mul.Tensor", lambda: a * 0.25, aten.mul.Tensor, (a, 0.25)),
        ("linear.default", lambda: torch._C._nn.linear(x, w, b), aten.linear.default, (x, w, b)),
        ("softmax.int", lambda: torch.softmax(a, dim=-1), aten.softmax.int, (a, -1)),
    ]
    n = 20_000

    def us(fn: Callable[[], Any]) -> str:
        return f"{min(timeit.repeat(fn, number=n, repeat=5)) / n * 1e6:.2f}"

    return [(name, us(eager), us(lambda: op(*args)), us(lambda: op._op(*args))) for name, eager, op, args in cases]


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

    def spy_dynamo(gm: torch.fx.GraphModule, example_inputs: Any) -> Any:
        def graph(*args: Any) -> Any:
            captured["graph"], captured["graph_args"] = gm.forward, args
            return gm.forward(*args)

        return graph

    torch._dynamo.reset()
    torch.compile(model, backend=spy_dynamo, dynamic=True)(x)
    backend.load_wrapper, backend.compile_fx = spy_load, spy_compile
    try:
        torch._dynamo.reset()
        compiled = torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)
        compiled(x)
    finally:
        backend.load_wrapper, backend.compile_fx = load, compile_fx
    wrapper, wargs, aot, aargs = captured["wrapper"], captured["wrapper_args"], captured["aot"], captured["aot_args"]
    graph, gargs = captured["graph"], captured["graph_args"]
    rounds: dict[str, list[float]] = {"eager": [], "graph": [], "wrapper": [], "aot": [], "full": []}
    for _ in range(5):
        rounds["eager"].append(best_us(lambda: model(x)))
        rounds["graph"].append(best_us(lambda: graph(*gargs)))
        rounds["wrapper"].append(best_us(lambda: wrapper(list(wargs))))
        rounds["aot"].append(best_us(lambda: aot(*aargs)))
        rounds["full"].append(best_us(lambda: compiled(x)))
    med = {k: sorted(v)[2] for k, v in rounds.items()}
    return (name, *(f"{med[k]:.0f}" for k in ("eager", "graph", "wrapper", "aot", "full")))


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
    header1 = ("one aten call", "eager binding µs", "torch.ops.aten.X.Y(...) µs", "OpOverload._op µs")
    t1 = format_table(header1, ops)
    header = ("model", "eager µs", "Dynamo's FX graph only µs", "wrapper only µs", "+ AOT runtime µs", "torch.compile call µs")
    t2 = format_table(header, rows)
    header3 = ("function", "plain µs", *(f"{name} µs" for name, _ in BACKENDS))
    t3 = format_table(header3, floors)
    print(t1 + "\n\n" + t2 + "\n\n" + t3)
    if args.write:
        append_section(args.write, f"probe_overhead.py — {datetime.date.today().isoformat()}, device cpu, torch {torch.__version__}",
                       [*markdown_table(header1, ops), "", *markdown_table(header, rows), "", *markdown_table(header3, floors)])
    return 0


if __name__ == "__main__":
    sys.exit(main())
