"""Kernels for 2-D pooling, forward (lowering/pooling.py): max_pool2d_with_indices and
avg_pool2d walk each window in eager's order, so values and indices are bitwise eager's,
NaN, -inf and ties included; one kernel source serves every input size."""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.lowering import DecisionKind
from xpu_lite.report import capture

from .conftest import assert_bitwise
from .test_indexing import _first_samples, _small
from .test_kernels import _run_samples

OPINFOS = {"nn.functional.max_pool2d": "aten.max_pool2d_with_indices.default",
           "nn.functional.avg_pool2d": "aten.avg_pool2d.default"}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
@pytest.mark.parametrize("name", list(OPINFOS))
def test_opinfo_samples_are_bitwise_eager(device: str, name: str, dtype: torch.dtype, where: str) -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == name)
    if dtype not in op.supported_dtypes(device):
        pytest.skip(f"{name} does not support {dtype} in eager on {device}")
    samples = _first_samples([s for s in op.sample_inputs(device, dtype) if _small(s)])
    with capture() as reports:
        _run_samples(op, samples, where, lambda out, fn, s: assert_bitwise(out, fn(s.input, *s.args)))
    lowered = any(d.op == OPINFOS[name] and d.kind is DecisionKind.KERNEL for r in reports for d in r.decisions)
    assert lowered, f"no sample of {name} was lowered to a kernel"


def pools(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    values, indices = F.max_pool2d(x, 3, 2, 1, return_indices=True)
    return (values, indices, F.max_pool2d(x, 2, ceil_mode=True), F.max_pool2d(x, 2, 1, 1, dilation=2),
            F.avg_pool2d(x, 3, 2, 1), F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(x, 2, divisor_override=3))


def _special(n: int, device: str, dtype: torch.dtype) -> torch.Tensor:
    x = torch.randn(2, 3, n, n + 1, device=device).to(dtype)
    x[0, 0, 1, 1] = float("nan")  # taken, index and all, wherever a window holds it
    x[0, 1, 2:4] = float("-inf")  # a window of -inf only: its first valid tap's index
    x[0, 1, 4, 2] = float("nan")
    x[1, 2, :3, :3] = 1.0  # ties: the first
    x[1, 1].fill_(-0.0)
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
def test_windows_are_bitwise_eager_for_all_sizes(device: str, dtype: torch.dtype) -> None:
    compiled = torch.compile(pools, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (7, 8, 11):
            x = _special(n, device, dtype)
            assert_bitwise(compiled(x), pools(x))
            x = x.to(memory_format=torch.channels_last)  # eager's results are channels-last too
            assert_bitwise(compiled(x), pools(x))
    assert xpu_lite.counters.forward_graphs <= 2 and not any(r.fallbacks for r in reports)
    for source in reports[0].kernels:
        assert not re.search(r"\b(7|8|11|12)\b", source), f"a dynamic size was baked into the kernel:\n{source}"
    pooled = [d for d in reports[0].decisions if "pool" in d.op]
    assert len(pooled) == 6 and all(d.kind is DecisionKind.KERNEL for d in pooled), pooled


def pools_1d(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    return (F.avg_pool1d(x, 3, 2, 1), F.max_pool1d(x, 2), F.max_pool1d(x, 3, 1, 1, return_indices=True)[1],
            F.avg_pool2d(x.unsqueeze(2), (1, 3), padding=(0, 1), count_include_pad=False))


def test_one_dimensional_pools_have_a_length_one_dim(device: str) -> None:
    """avg_pool1d and max_pool1d run the 2-D ops on an (N, C, 1, L) view: the taps of the
    length-1 dim are known inside (or outside) when compiling, and no mask is a scalar.
    (Dynamo specializes the length of 1-D pools, with any backend: a graph per length.)"""
    compiled = torch.compile(pools_1d, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (8, 13):
            x = torch.randn(2, 3, n, device=device)
            assert_bitwise(compiled(x), pools_1d(x))
    pooled = [d for r in reports for d in r.decisions if "pool" in d.op]
    assert len(pooled) == 8 and all(d.kind is DecisionKind.KERNEL for d in pooled), pooled


def test_backward_reads_the_kernels_indices(device: str) -> None:
    """The backward ops stay eager (max_pool2d_with_indices_backward reads the indices the
    kernel stored): gradients bitwise eager's."""
    def fn(x):
        return F.max_pool2d(x * 2, 3, 2, 1).sum() + F.avg_pool2d(x, 2, count_include_pad=False, padding=1).square().sum()

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (6, 9):
        x = torch.randn(2, 3, n, n, device=device)
        x[0, 0, :3, :3] = 1.0  # ties: the gradient goes where the index says
        a, b = x.clone().requires_grad_(), x.clone().requires_grad_()
        compiled(a).backward()
        fn(b).backward()
        assert_bitwise(a.grad, b.grad)


def test_what_is_not_lowered_says_why() -> None:
    def fn(x):
        return F.max_pool2d(x.double(), 2), F.avg_pool2d(x, 9, 1, 4)

    report = xpu_lite.explain(fn, torch.randn(2, 12, 12), dynamic=True)
    reasons = {row[2]: row[4] for row in report.rows() if "pool" in row[2]}
    assert "a float64 result; this lowering takes float32, float16, bfloat16" in reasons["aten.max_pool2d_with_indices.default"]
    assert "a 9x9 window: more than 64 taps to unroll" in reasons["aten.avg_pool2d.default"]
