"""Kernels for adaptive pools (lowering/adaptive.py): each result element reduces a window
whose length depends on the symbolic input size, so one kernel serves every size. Results
are bitwise eager's in every float dtype: max values and indices (NaN, -inf and ties
included), and averages, whose sums add a window's elements in eager's order and divide
as eager does (but for fp16/bf16 3-D averages: eager's cpu kernel adds in the dtype,
rounding every add; ours add in float32 and round once, tested against float64).
Gradients add in eager's order too: float32 ones are bitwise eager's; fp16/bf16 ones are
no further from the float64 gradient than eager's (eager's cpu kernels round the terms
to the dtype)."""
from __future__ import annotations

import re

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.lowering import DecisionKind
from xpu_lite.report import capture

from .conftest import assert_bitwise, assert_eager_formula
from .test_kernels import LOW_PRECISION_TOL, _closer_than_eager, _run_samples
from .test_pooling import DTYPES, gradients_for_all_sizes, opinfo_gradients_are_bitwise_eager, opinfo_samples

OPINFOS = {"nn.functional.adaptive_avg_pool1d": "aten._adaptive_avg_pool2d.default",
           "nn.functional.adaptive_avg_pool2d": "aten._adaptive_avg_pool2d.default",
           "nn.functional.adaptive_avg_pool3d": "aten._adaptive_avg_pool3d.default",
           "nn.functional.adaptive_max_pool1d": "aten.adaptive_max_pool2d.default",
           "nn.functional.adaptive_max_pool2d": "aten.adaptive_max_pool2d.default",
           "nn.functional.adaptive_max_pool3d": "aten.adaptive_max_pool3d.default"}


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
@pytest.mark.parametrize("name", list(OPINFOS))
def test_opinfo_samples_are_bitwise_eager(device: str, name: str, dtype: torch.dtype, where: str) -> None:
    op, samples = opinfo_samples(name, device, dtype)

    def check(out, fn, sample):
        eager = fn(sample.input, *sample.args)
        if name.endswith("avg_pool3d") and dtype is not torch.float32:  # eager rounds every add
            _closer_than_eager(out, eager, fn(sample.input.double(), *sample.args), LOW_PRECISION_TOL[dtype])
        else:
            assert_bitwise(out, eager)

    with capture() as reports:
        _run_samples(op, samples, where, check)
    lowered = any(d.op == OPINFOS[name] and d.kind is DecisionKind.KERNEL for r in reports for d in r.decisions)
    assert lowered, f"no sample of {name} was lowered to a kernel"


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("name", list(OPINFOS))
def test_opinfo_sample_gradients_are_bitwise_eager(device: str, name: str, where: str) -> None:
    samples, reports = opinfo_gradients_are_bitwise_eager(name, device, where)
    backward = [d for r in reports if r.kind == "backward" for d in r.decisions if "adaptive" in d.op]
    kernels = [d for d in backward if d.kind is DecisionKind.KERNEL]
    assert len(kernels) == sum(s.input.numel() > 0 for s in samples), backward
    assert all(str(d.reason).startswith("aten kernel: an empty result") for d in backward if d not in kernels), backward


def adaptive_pools(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Windows of varying length (the result smaller than the input, larger, and a 1-D
    pool, which runs the 2-D op over a length-1 dim), with max's values and indices."""
    values, indices = F.adaptive_max_pool2d(x, (3, 4), return_indices=True)
    return (values, indices, F.adaptive_max_pool2d(x, (17, 2)), F.adaptive_avg_pool2d(x, (3, 4)),
            F.adaptive_avg_pool2d(x, (17, 5)), F.adaptive_max_pool1d(x.flatten(2), 3, return_indices=True)[1],
            F.adaptive_avg_pool1d(x[:, :, 0], 4))


def _special(n: int, device: str, dtype: torch.dtype) -> torch.Tensor:
    """NaN, -inf, ties and -0.0, set in `dtype` (a NaN converted to bfloat16 by eager's
    vectorized cast has other payload bits than eager's pooling kernels give a NaN result;
    set in bfloat16, both are eager's canonical 0x7FC0)."""
    x = torch.randn(2, 3, n, n + 1, device=device).to(dtype)
    x[0, 0, 1, 1] = float("nan")  # the window's value and index, wherever it lies
    x[0, 0, 1, 3] = float("nan")  # a second NaN in some windows: eager's index is the last
    x[0, 1, :4] = float("-inf")  # windows of -inf only: the first element's index
    x[1, 2, :3, :3] = 1.0  # ties: the first
    x[1, 1].fill_(-0.0)
    return x


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
def test_windows_for_all_sizes(device: str, dtype: torch.dtype) -> None:
    """One graph, one kernel source per pool for every input size and layout; bitwise
    eager's: max values and indices (NaN: the last one in a window; -inf; ties) and
    averages."""
    compiled = torch.compile(adaptive_pools, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (7, 10, 13):
            for layout in (torch.contiguous_format, torch.channels_last):
                x = _special(n, device, dtype).to(memory_format=layout)
                assert_eager_formula(compiled(x), adaptive_pools(x))
    assert xpu_lite.counters.forward_graphs <= 2 and not any(r.fallbacks for r in reports)
    pooled = [d for d in reports[0].decisions if "pool" in d.op]
    assert len(pooled) == 6 and all(d.kind is DecisionKind.KERNEL for d in pooled), pooled
    for source in reports[0].kernels:
        assert not re.search(r"\b(7|8|10|11|13|14)\b", source), f"a dynamic size was baked into the kernel:\n{source}"


def backward_pools(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """One input each, so every input's gradient is one pool's backward: windows that
    overlap (an element in up to 2 x 2 of them; 3-D: 2 x 2 x 2) and windows of one element
    repeated (a result larger than the input: an element under several windows)."""
    return (F.adaptive_max_pool2d(xs[0], (3, 4)), F.adaptive_max_pool2d(xs[1], (17, 2)),
            F.adaptive_avg_pool2d(xs[2], (3, 4)), F.adaptive_avg_pool2d(xs[3], (17, 5)),
            F.adaptive_avg_pool3d(xs[4].unsqueeze(2).expand(-1, -1, 3, -1, -1), (2, 3, 2)),
            F.adaptive_max_pool3d(xs[5].unsqueeze(2).expand(-1, -1, 3, -1, -1), (2, 3, 2)))


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
def test_backward_kernels_for_all_sizes(device: str, dtype: torch.dtype) -> None:
    """Each input element adds the gradients of the windows over it, in eager's order; ties
    send the gradient where the stored index says. float32 bitwise eager's, fp16/bf16 no
    further from float64 than eager."""
    reports = gradients_for_all_sizes(backward_pools, (8, 10, 13), device, dtype)
    backward = [d for r in reports if r.kind == "backward" for d in r.decisions if "adaptive" in d.op]
    assert len({d.op for d in backward}) == 4 and all(d.kind is DecisionKind.KERNEL for d in backward), backward
    backward_report = next(r for r in reports if r.kind == "backward")
    assert not [d for d in backward_report.fallbacks if "adaptive" in d.op], backward_report.fallbacks
    for source in backward_report.kernels:
        assert not re.search(r"\b(8|9|10|11|13|14)\b", source), f"a dynamic size was baked into the kernel:\n{source}"


def test_a_window_longer_than_a_block_is_walked_in_chunks(device: str) -> None:
    """A window of more elements than a persistent block holds (1024): the looped max
    kernel, which finds the max in one pass and its index (the first max, or the last NaN)
    in a second, gives eager's values and indices; the average, one element at a time as
    every average, eager's."""
    def fn(x):
        values, indices = F.adaptive_max_pool2d(x, (1, 2), return_indices=True)
        return values, indices, F.adaptive_avg_pool2d(x, (1, 2))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    before = xpu_lite.counters.looped_launches
    for n in (48, 50):
        x = torch.randn(2, 2, n, n, device=device)
        x[0, 0, 40, 3] = x[0, 0, 2, 5] = float("nan")  # in the first window: its index is the later one
        x[1, 1, 7:9, 30:40] = 9.0  # ties: the first
        assert_bitwise(compiled(x), fn(x))
    assert xpu_lite.counters.looped_launches > before


def test_static_sizes_walk_the_longest_window_only(device: str) -> None:
    """With static sizes the kernel walks the longest window's extent, not the bound for all
    sizes: 2 x 2 here, every window that long, so no offset is masked; and the pool fuses
    with what reads its rows. Averages walk their windows in order, maxima in one block."""
    def fn(x):
        return F.adaptive_avg_pool2d(x, (4, 5)) * 2 + 1, F.adaptive_max_pool2d(x, (3, 5))

    x = torch.randn(2, 3, 8, 10, device=device)
    with capture() as reports:
        actual = torch.compile(fn, backend="xpu_lite", dynamic=False)(x)
    assert_bitwise(actual, fn(x))
    (report,) = reports
    avg = next(d for d in report.decisions if d.op == "aten._adaptive_avg_pool2d.default")
    assert "reduces 4 per row: in order, one element at a time (RBLOCK=1)" in avg.kernel, avg.kernel  # 8 / 4 by 10 / 5
    source = next(k for k in report.kernels if "_adaptive_avg_pool2d, mul, add" in k)
    assert "mask=mask," in source and " < " not in source.split("mask = xmask & rmask")[1], source
    maximum = next(d for d in report.decisions if d.op == "aten.adaptive_max_pool2d.default")
    assert "reduces 8 per row: persistent" in maximum.kernel, maximum.kernel  # windows of 3 or 4 rows by 2


def test_what_is_not_lowered_says_why() -> None:
    def fn(x):
        return F.adaptive_avg_pool2d(x.double(), 3), F.adaptive_max_pool2d(x.double(), 3)

    report = xpu_lite.explain(fn, torch.randn(2, 12, 12), dynamic=True)
    reasons = {row[2]: row[4] for row in report.rows() if "adaptive" in row[2]}
    assert "a float64 result; this lowering takes float32, float16, bfloat16" in reasons["aten._adaptive_avg_pool2d.default"]
    assert "a float64 result" in reasons["aten.adaptive_max_pool2d.default"]
