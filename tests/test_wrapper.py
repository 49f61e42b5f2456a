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


def test_prims_convert_element_type_is_aten_to_copy() -> None:
    """codegen/prims.py calls aten._to_copy for prims.convert_element_type: the same values,
    dtype, sizes and strides for every layout and dtype pair (or the same error)."""
    base = torch.randn(4, 6, 5) * 100
    layouts = [base, base.transpose(0, 2), base[:, ::2], base[0, 0, 0], base[:, :1].expand(4, 3, 5),
               base.permute(2, 0, 1).contiguous().permute(1, 2, 0), torch.tensor([float("nan"), -0.0, float("inf"), 1e-45])]
    dtypes = (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int64, torch.int32, torch.bool)
    for layout in layouts:
        for source in dtypes:
            x = layout.to(source)
            for dtype in dtypes:
                want = torch.ops.prims.convert_element_type.default(x, dtype)
                got = torch.ops.aten._to_copy.default(x, dtype=dtype)
                assert (got.dtype, got.shape, got.stride()) == (want.dtype, want.shape, want.stride()), (x.stride(), source, dtype)
                assert torch.equal(got.view(torch.uint8) if dtype is torch.bool else got.nan_to_num(0.5),
                                   want.view(torch.uint8) if dtype is torch.bool else want.nan_to_num(0.5))
                assert torch.equal(got.isnan(), want.isnan()) and torch.equal(got.signbit(), want.signbit())


class _RMSNorm(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.weight, self.eps = torch.nn.Parameter(torch.randn(8)), 1e-6

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def test_a_tensorified_float_is_converted_by_aten_not_prims() -> None:
    """Under dynamic=True the eps reaches the graph as a tensor that AOTAutograd converts with
    prims.convert_element_type (Python, ~50 us a call); the wrapper calls aten._to_copy."""
    model = _RMSNorm()
    compiled = torch.compile(model, backend="xpu_lite", mode="lite", dynamic=True)
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 8)
            got, sources = xpu_lite.run_and_get_code(compiled, x)
            source = sources[0] if batch == 2 else source
            want = model(x)
            assert torch.equal(got, want) and got.stride() == want.stride()
    assert xpu_lite.counters.forward_graphs == 1
    assert "torch.ops.prims." not in source, source
    assert "torch.ops.aten._to_copy.default(" in source and "(prims.convert_element_type.default as aten._to_copy.default)" in source
    with torch.no_grad():
        report = str(xpu_lite.explain(model, torch.randn(2, 8), mode="lite", dynamic=True))
    assert "called as aten._to_copy.default (what the prims op's Python implementation runs)" in report, report
