"""Kernels for 2-D and 3-D pooling (lowering/pooling.py): max_pool2d/3d_with_indices and
avg_pool2d/3d walk each window in eager's order, so values and indices are bitwise eager's, NaN, -inf
and ties included; their backward ops walk the windows over each input element in the
order eager adds their gradients, so float32 gradients are bitwise eager's (fp16/bf16 ones
round once, against float64); one kernel source serves every input size."""
from __future__ import annotations

import re
from typing import Any

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.lowering import DecisionKind
from xpu_lite.report import capture

from .conftest import assert_bitwise, assert_eager_formula
from .test_indexing import _first_samples, _small
from .test_kernels import LOW_PRECISION_TOL, _closer_than_eager, _run_samples

OPINFOS = {"nn.functional.max_pool2d": "aten.max_pool2d_with_indices.default",
           "nn.functional.avg_pool2d": "aten.avg_pool2d.default",
           "nn.functional.max_pool3d": "aten.max_pool3d_with_indices.default",
           "nn.functional.avg_pool3d": "aten.avg_pool3d.default"}
DTYPES = [torch.float32, torch.float16, torch.bfloat16]


def opinfo_samples(name: str, device: str, dtype: torch.dtype) -> tuple[Any, list]:
    """(the OpInfo, its first small samples in `dtype`); skips where eager takes no `dtype`."""
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == name)
    if dtype not in op.supported_dtypes(device):
        pytest.skip(f"{name} does not support {dtype} in eager on {device}")
    return op, _first_samples([s for s in op.sample_inputs(device, dtype) if _small(s)])


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
@pytest.mark.parametrize("name", list(OPINFOS))
def test_opinfo_samples_are_bitwise_eager(device: str, name: str, dtype: torch.dtype, where: str) -> None:
    op, samples = opinfo_samples(name, device, dtype)
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
    # torch 2.11's max_pool2d meta guards on (H - 1) % 2 (a graph per parity, the lent
    # GPUs' torch); 2.13's does not: one per memory format
    graphs = 2 if torch.__version__ >= "2.13" else 4
    assert xpu_lite.counters.forward_graphs <= graphs and not any(r.fallbacks for r in reports)
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


def _gradient(fn, x: torch.Tensor, grad: torch.Tensor) -> torch.Tensor:
    x = x.detach().clone().requires_grad_()
    out = fn(x)
    (out[0] if isinstance(out, tuple) else out).backward(grad)
    return x.grad


def _backward_pool_kernels(reports) -> list:
    return [d for r in reports if r.kind == "backward" for d in r.decisions
            if re.fullmatch(r"aten\.(max|avg)_pool[23]d(_with_indices)?_backward\.default", d.op)]


def opinfo_gradients_are_bitwise_eager(name: str, device: str, where: str) -> tuple[list, list]:
    """Compile each of the OpInfo's first float32 samples alone (in the default mode, or in
    a region in lite mode) and assert its input's gradient bitwise eager's. Returns
    (samples, reports)."""
    op, samples = opinfo_samples(name, device, torch.float32)
    with capture() as reports:
        for sample in samples:
            torch._dynamo.reset()

            def fn(x, sample=sample):
                if where == "lite region":
                    with xpu_lite.compile_region():
                        return op(x, *sample.args, **sample.kwargs)
                return op(x, *sample.args, **sample.kwargs)

            compiled = torch.compile(fn, backend="xpu_lite", mode="lite" if where == "lite region" else None, dynamic=True)
            out = fn(sample.input)
            grad = torch.randn_like(out[0] if isinstance(out, tuple) else out)
            assert_eager_formula(_gradient(compiled, sample.input, grad), _gradient(fn, sample.input, grad))
    return samples, reports


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("name", list(OPINFOS))
def test_opinfo_sample_gradients_are_bitwise_eager(device: str, name: str, where: str) -> None:
    """float32: each window's gradient is added to an input element in eager's order, from 0."""
    samples, reports = opinfo_gradients_are_bitwise_eager(name, device, where)
    kernels = _backward_pool_kernels(reports)
    assert len(kernels) == len(samples) and all(d.kind is DecisionKind.KERNEL for d in kernels), kernels


def backward_pools(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Windows that overlap (up to 4 or 9 gradients to add to an element), dilated,
    ceil_mode, count_include_pad=False and a divisor override; one input each, so every
    input's gradient is one pool's backward, with no sum of gradients after it."""
    return (F.max_pool2d(xs[0], 3, 2, 1), F.max_pool2d(xs[1], 3, 1, 1),
            F.max_pool2d(xs[2], 2, 1, 1, dilation=2, ceil_mode=True),
            F.avg_pool2d(xs[3], 3, 2, 1, ceil_mode=True, count_include_pad=False),
            F.avg_pool2d(xs[4], (2, 3), 1, (1, 0), divisor_override=5), F.avg_pool2d(xs[5], 3, 2, 1))


def gradients(fn, xs: list[torch.Tensor], grads: list[torch.Tensor]) -> list[torch.Tensor]:
    xs = [x.detach().clone().requires_grad_() for x in xs]
    torch.autograd.backward(fn(*xs), grads)
    return [x.grad for x in xs]


def gradients_for_all_sizes(fn, sizes: tuple[int, ...], device: str, dtype: torch.dtype) -> list:
    """Compile fn (one input per pool) with dynamic=True and compare its inputs' gradients
    with eager's for (2, 3, n, n + 1) inputs (ties in a corner), contiguous and
    channels-last: float32 bitwise; fp16/bf16 no further from the float64 gradients than
    eager's. Returns the reports."""
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in sizes:
            x = torch.randn(2, 3, n, n + 1, device=device)
            x[0, 0, :3, :3] = 1.0
            for layout in (torch.contiguous_format, torch.channels_last):
                xs = [x.to(memory_format=layout)] * 6
                grads = [torch.randn_like(out) for out in fn(*xs)]
                low = ([t.to(dtype) for t in xs], [g.to(dtype) for g in grads])
                actual = gradients(compiled, *low)
                if device != "cpu":  # cuda's channels-last avg_pool2d backward ignores the padding
                    low = ([t.contiguous() for t in low[0]], [g.contiguous() for g in low[1]])  # (pytorch#188344)
                eager = gradients(fn, *low)
                if dtype is torch.float32:
                    assert_eager_formula(actual, eager)
                    continue
                exact = gradients(fn, [t.double() for t in low[0]], [g.double() for g in low[1]])
                for a, e, r in zip(actual, eager, exact, strict=True):
                    _closer_than_eager(a, e, r, LOW_PRECISION_TOL[dtype])
    return reports


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
def test_backward_kernels_for_all_sizes(device: str, dtype: torch.dtype) -> None:
    """float32 gradients are bitwise eager's, ties (the gradient goes where the stored index
    says) and channels-last included; fp16/bf16 ones are no further from the float64
    gradients than eager's (eager's CPU kernels round after every add, ours once)."""
    reports = gradients_for_all_sizes(backward_pools, (6, 9, 12), device, dtype)
    kernels = _backward_pool_kernels(reports)
    assert len(kernels) >= 6 and all(d.kind is DecisionKind.KERNEL for d in kernels), kernels
    backward = next(r for r in reports if r.kind == "backward")
    assert not backward.fallbacks, backward.fallbacks
    for source in backward.kernels:
        assert not re.search(r"\b(6|7|9|10|12|13)\b", source), f"a dynamic size was baked into the kernel:\n{source}"


def pools_3d(*xs: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Overlapping, dilated, ceil_mode, count_include_pad=False and divisor-override
    windows over (N, C, D, H, W); one input each, so each gradient is one pool's backward."""
    values, indices = F.max_pool3d(xs[0], 3, 2, 1, return_indices=True)
    return (values, indices, F.max_pool3d(xs[1], (2, 3, 2), 1, 1, dilation=(2, 1, 1), ceil_mode=True),
            F.avg_pool3d(xs[2], 3, 2, 1, ceil_mode=True, count_include_pad=False),
            F.avg_pool3d(xs[3], (2, 2, 3), 1, (1, 0, 1), divisor_override=11), F.avg_pool3d(xs[4], 2))


def _pools_3d_and_gradients(fn, xs: list[torch.Tensor], grads: list[torch.Tensor] | None):
    xs = [x.detach().clone().requires_grad_() for x in xs]
    outs = fn(*xs)
    floats = [o for o in outs if o.is_floating_point()]
    grads = grads or [torch.randn_like(o) for o in floats]
    torch.autograd.backward(floats, grads)
    return [o.detach() for o in outs], [x.grad for x in xs], grads


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
def test_three_dimensional_windows_and_gradients_for_all_sizes(device: str, dtype: torch.dtype) -> None:
    """The 3-D ops are the 2-D ones with one more window dim: float32 values, indices and
    gradients bitwise eager's (NaN, ties, channels-last-3d); fp16/bf16 within a rounding of
    the float64 result (eager's CPU avg_pool3d takes no fp16); one source for every size."""
    compiled = torch.compile(pools_3d, backend="xpu_lite", dynamic=True)
    layouts = (torch.contiguous_format, torch.channels_last_3d) if dtype is torch.float32 else (torch.contiguous_format,)
    with capture() as reports:
        for n in (5, 7):
            x = torch.randn(2, 3, n, n + 1, n - 1, device=device)
            x[0, 0, 1, 1, 1] = float("nan")
            x[1, 2, :2, :3, :3] = 1.0  # ties: the first, and its gradient goes there
            for layout in layouts:
                xs = [x.to(dtype).to(memory_format=layout)] * 5
                actual, actual_grads, grads = _pools_3d_and_gradients(compiled, xs, None)
                if dtype is torch.float32:
                    eager, eager_grads, _ = _pools_3d_and_gradients(pools_3d, xs, grads)
                    assert_eager_formula(actual, eager)
                    assert_eager_formula(actual_grads, eager_grads)
                    continue
                exact, exact_grads, _ = _pools_3d_and_gradients(pools_3d, [t.double() for t in xs],
                                                                [g.double() for g in grads])
                assert torch.equal(actual[1], exact[1]), "max_pool3d's indices"
                for a, e in zip(actual[:1] + actual[2:] + actual_grads, exact[:1] + exact[2:] + exact_grads, strict=True):
                    close = (a.double() - e).abs() <= LOW_PRECISION_TOL[dtype] * (1 + e.abs())
                    assert bool((close | (a.isnan() & e.isnan())).all()), f"max error {(a.double() - e).abs().nan_to_num().max()}"
    pooled = [d for r in reports for d in r.decisions if "pool3d" in d.op]
    assert all(d.kind is DecisionKind.KERNEL for d in pooled), pooled
    assert len({d.op for d in pooled}) == 4, pooled  # the two pools and their backward ops
    assert xpu_lite.counters.forward_graphs <= len(layouts) and not any(r.fallbacks for r in reports)
    for source in (k for r in reports for k in r.kernels):
        assert not re.search(r"\b(4|5|6|7|8)\b", source), f"a dynamic size was baked into the kernel:\n{source}"


def test_what_is_not_lowered_says_why() -> None:
    def fn(x):
        return F.max_pool2d(x.double(), 2), F.avg_pool2d(x, 9, 1, 4)

    report = xpu_lite.explain(fn, torch.randn(2, 12, 12), dynamic=True)
    reasons = {row[2]: row[4] for row in report.rows() if "pool" in row[2]}
    assert "a float64 result; this lowering takes float32, float16, bfloat16" in reasons["aten.max_pool2d_with_indices.default"]
    assert "a 9x9 window: more than 64 taps to unroll" in reasons["aten.avg_pool2d.default"]

    def cubes(x):
        return F.max_pool3d(x, 5)

    report = xpu_lite.explain(cubes, torch.randn(2, 6, 6, 6), dynamic=True)
    reasons = {row[2]: row[4] for row in report.rows() if "pool" in row[2]}
    assert "a 5x5x5 window: more than 64 taps to unroll" in reasons["aten.max_pool3d_with_indices.default"]

    def dilated(x):  # 25 taps forward; backward, 13 x 13 windows may hold an element
        return F.max_pool2d(x, 5, 1, 2, dilation=3).sum() + F.avg_pool2d(x.double(), 2).sum()

    with capture() as reports:
        x = torch.randn(2, 14, 14, requires_grad=True)
        torch.compile(dilated, backend="xpu_lite", dynamic=True)(x).backward()
    reasons = {d.op: d.reason for r in reports if r.kind == "backward" for d in r.fallbacks if "pool" in d.op}
    assert "(13, 13) windows per element: more than 64 to unroll" in str(reasons["aten.max_pool2d_with_indices_backward.default"])
    assert "a float64 result" in str(reasons["aten.avg_pool2d_backward.default"])


def test_a_producer_only_pools_read_is_computed_in_the_pools_kernel(device: str) -> None:
    """`F.max_pool2d(x.relu(), ...)` in inference is one kernel: the relu is computed at each
    window position the pool reads, never stored (inlining.inlined_producers). A padded tap
    reads 0 as a masked load does, not the producer of 0 (`x + 1` would add 1 per padded
    tap to the average); bitwise eager's at every size."""
    def fn(x):
        return (F.max_pool2d(x.relu(), 3, 2, padding=1), F.avg_pool2d(x + 1, 3, 1, padding=1),
                F.avg_pool2d((x * 2).half(), 2, padding=1, ceil_mode=True, count_include_pad=False))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (5, 7):  # one parity: ceil_mode's output size guards on it
            x = torch.randn(2, 3, n, n, device=device)
            assert_eager_formula(compiled(x), fn(x))
    (report,) = reports
    inlined = sorted(d.op for d in report.decisions if "computed where" in d.kernel)
    assert inlined == ["aten._to_copy.default", "aten.add.Tensor", "aten.mul.Tensor", "aten.relu.default"], inlined
    assert len({d.kernel.split()[0] for d in report.decisions if d.kernel}) == 3  # one per pool
