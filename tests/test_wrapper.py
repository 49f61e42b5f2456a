"""The generated wrapper as text and as a stage on its own (no device, no Dynamo)."""
from __future__ import annotations

import torch
from torch.fx.experimental.proxy_tensor import make_fx

import xpu_lite
from xpu_lite.codegen import generate_wrapper
from xpu_lite.config import parse_config
from xpu_lite.decomp import build_plan
from xpu_lite.lowering import partition
from xpu_lite.runtime import load_wrapper


def chain(x: torch.Tensor) -> torch.Tensor:
    n = x.shape[0]
    y = x.view(n * 2, -1).relu()
    return y * n


def body_lines(source: str) -> list[str]:
    lines = source.split("def call(args):\n", 1)[1].splitlines()
    return [line for line in lines if line.strip()]


def test_stage_pipeline_without_dynamo() -> None:
    gm = make_fx(chain, tracing_mode="symbolic")(torch.randn(4, 6))
    decisions = partition(gm, build_plan(parse_config("lite")), "cpu")
    code = generate_wrapper(gm, decisions, "stage", "cpu")
    assert "s" in code.source and ".size(0)" in code.source  # a size symbol bound from the input
    assert "torch.ops.aten.sym_size" not in code.source  # size arithmetic is plain Python
    call = load_wrapper(code)
    for n in (2, 5):
        x = torch.randn(n, 6)
        assert torch.equal(call([x])[0] if isinstance(call([x]), (tuple, list)) else call([x]), chain(x))


def test_source_is_deterministic_and_commented() -> None:
    sources = []
    for _ in range(2):
        torch._dynamo.reset()
        compiled = torch.compile(chain, backend="xpu_lite", mode="lite", dynamic=True)
        _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(4, 6))
        sources.append(source.split("\n", 1)[1])  # first line names the graph number
    assert sources[0] == sources[1]
    for line in body_lines(sources[0]):
        assert "  # " in line or line.strip().startswith("raise "), f"line without a comment: {line!r}"
    assert "0x" not in sources[0]  # no ids or addresses


def test_no_dead_code_for_unused_sizes() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        unused = x.shape[0] * x.shape[1]  # noqa: F841
        return x.cos()

    compiled = torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)
    _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(4, 6))
    calls = [line for line in body_lines(source) if "torch.ops." in line]
    assert len(calls) == 1 and "aten.cos.default(" in calls[0]
    assert ".size(" not in source and "sym_size" not in source


def test_buffers_are_freed_after_last_use() -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x.sin().cos().exp()

    compiled = torch.compile(fn, backend="xpu_lite", mode="lite")
    _, (source,) = xpu_lite.run_and_get_code(compiled, torch.randn(8))
    assert "del buf0" in source and "del buf1" in source
