"""Ops whose eager implementation rounds float16/bfloat16 steps inside one aten op
(decomp/half_steps.py): the kernels round the same steps, bitwise eager's on cpu. Before
2026-11-27 torch._decomp's steps, fused, stayed float32 between them and a quarter to a half
of the float16 values differed from eager's. On cuda/xpu the results are compared within
the dtype's resolution (their exp and log are the device's). Each test also checks that no
eager call is left."""
from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.report import capture

from .conftest import assert_bitwise

HALF = pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
REDUCTIONS = ("none", "mean", "sum")


def _compare(fn, *args, nan_payloads: bool = True) -> None:
    """fn compiled against eager: bitwise, strides too, on cpu; within 8e-3 elsewhere. No
    eager call but the checks of values eager makes too (binary_cross_entropy's input in
    [0, 1]: test_wrapper.py)."""
    with capture() as reports:
        got = torch.compile(fn, backend="xpu_lite", dynamic=True)(*args)
    want = fn(*args)
    if args[0].device.type == "cpu":
        assert_bitwise(got, want, nan_payloads)
        assert [t.stride() for t in got] == [t.stride() for t in want]
    else:
        torch.testing.assert_close(got, want, rtol=8e-3, atol=8e-3, equal_nan=True)
    assert [d.op for r in reports for d in r.fallbacks if d.op != "aten._assert_async.msg"] == []


def _inputs(device: str, dtype: torch.dtype, columns: int) -> tuple[torch.Tensor, ...]:
    """Logits, probabilities with exact 0 and 1, targets in [0, 1] with 0 and 1, a
    per-column weight: (3, columns), so that eager's vectorized body and scalar tail both run."""
    torch.manual_seed(columns)
    x = (torch.randn(3, columns, device=device) * 3).to(dtype)
    p = x.float().sigmoid().to(dtype)
    t = torch.rand(3, columns, device=device).to(dtype)
    p[0, 0], p[0, 1], t[1, 0], t[1, 1] = 0, 1, 0, 1
    return x, p, t, torch.rand(columns, device=device).to(dtype), (torch.rand(columns, device=device) * 3).to(dtype)


@HALF
def test_losses_round_the_steps_eager_rounds(device: str, dtype: torch.dtype) -> None:
    """binary_cross_entropy_with_logits (with weight and pos_weight), soft_margin_loss,
    mse_loss and binary_cross_entropy round each step on every device; smooth_l1_loss
    (float16) and huber_loss (bfloat16) on cpu; each reduction is of the loss rounded to
    the dtype. 7 and 37 columns: eager's scalar tail and vectorized body."""
    def fn(x, p, t, w, pw, reduction):
        return (F.binary_cross_entropy_with_logits(x, t, weight=w, pos_weight=pw, reduction=reduction),
                F.binary_cross_entropy_with_logits(x, t, reduction=reduction),
                F.soft_margin_loss(x, t, reduction=reduction), F.mse_loss(x, t, reduction=reduction),
                F.binary_cross_entropy(p, t, weight=w, reduction=reduction),
                F.smooth_l1_loss(x, t, reduction=reduction, beta=0.7), F.huber_loss(x, t, reduction=reduction, delta=0.7))

    for columns in (7, 37):
        for reduction in REDUCTIONS:
            _compare(fn, *_inputs(device, dtype, columns), reduction)


@HALF
def test_logit_rounds_eps_and_each_step_on_cpu(device: str, dtype: torch.dtype) -> None:
    """logit on cpu reads eps and 1 - eps in the dtype (bfloat16's 1 - 0.001 is 1.0, so
    logit(1.0, 0.001) is inf there) and rounds z / (1 - z); cuda/xpu compute in float32."""
    def fn(p):
        return torch.logit(p), torch.logit(p, 1e-3), torch.logit(p, 0.1)

    for columns in (7, 37):
        _compare(fn, _inputs(device, dtype, columns)[1])


@HALF
def test_log_softmax_and_logsumexp_round_as_eager(device: str, dtype: torch.dtype) -> None:
    """log_softmax over the last dim on cpu keeps each row's sum of exponentials and its
    log as the dtype (72 of 448 float16 values of a (64, 7) input differed before); other
    dims compute in float32 throughout, and a transposed input's result is contiguous, as
    eager's. logsumexp rounds each op of eager's body on every device (7 of 64 float16 rows
    differed before), infinities and NaN included (a NaN's payload is eager's vectorized
    cast's: conftest.assert_bitwise)."""
    def fn(x, y, z):
        return (x.log_softmax(-1), y.log_softmax(0), z.log_softmax(1), x.t().log_softmax(1),
                torch.logsumexp(x, 1), torch.logsumexp(y, 0, keepdim=True), torch.logsumexp(z, (0, 2)))

    torch.manual_seed(0)
    for rows in (64, 9):
        x, y = ((torch.randn(rows, 7, device=device) * 3).to(dtype) for _ in range(2))
        z = (torch.randn(4, rows, 5, device=device) * 3).to(dtype)
        y[0], y[1, 2], y[2, 3] = float("-inf"), float("inf"), float("nan")
        _compare(fn, x, y, z, nan_payloads=False)


@HALF
def test_softshrink_compares_in_float32_on_cpu(device: str, dtype: torch.dtype) -> None:
    """softshrink on cpu compares |x| with lambd in float32: float16's 0.3 is 0.30004883,
    above 0.3, so its softshrink is 4.9e-5, which the comparison of the graph (lambd
    converted to the dtype, as eager's comparison ops do) made 0 before 2026-11-27.
    cuda/xpu read lambd in the dtype. Zeros compare equal whatever their sign: eager's own
    cpu paths disagree there (its scalar loop gives `x * 0`, -0.0 below 0, and its
    vectorized body +0.0), and the kernel gives `x * 0`, as torch._decomp's."""
    def fn(x):
        return F.softshrink(x, 0.3), F.softshrink(x, 0.7), F.softshrink(x, 0.0)

    _compare(fn, torch.linspace(-2, 2, 4001, device=device).to(dtype))


@HALF
def test_loss_gradients_round_the_steps_eager_rounds(device: str, dtype: torch.dtype) -> None:
    """The backward kernels of mse_loss, binary_cross_entropy and soft_margin_loss (every
    device) and, on cpu, of logit and huber_loss round each step, their `2 / numel` or
    `1 / numel` in the dtype: a float32 0-dim tensor under dynamic shapes, so two sizes run
    one graph with no eager call (no float64 host math). Rows of 64 and 128: eager's
    vectorized body, whose order huber_loss's gradient follows, `norm * clipped * grad`
    (its scalar loop, which computes the last elements of a row of other lengths,
    multiplies `norm * grad * delta` with delta unrounded; before 2026-11-27's fifth
    session the kernel took that order in bfloat16 and float32 throughout in float16, a
    mean of 100 float16 values 79 one rounding off)."""
    aten = torch.ops.aten

    def fn(x, p, t, w, g, reduction):
        grad = g if reduction == 0 else g[0, 0]
        return (aten.mse_loss_backward(grad, x, t, reduction), aten.binary_cross_entropy_backward(grad, p, t, w, reduction),
                aten.soft_margin_loss_backward(grad, x, t, reduction), aten.logit_backward(g, p, 1e-3),
                aten.logit_backward(g, p), aten.huber_loss_backward(grad, x, t, reduction, 0.7),
                aten.huber_loss_backward(grad, x, t, reduction, 2.5))

    for columns in (64, 128):
        x, p, t, w, _ = _inputs(device, dtype, columns)
        for reduction in REDUCTIONS:
            _compare(fn, x, p, t, w, torch.randn_like(x), ("none", "mean", "sum").index(reduction))
    assert xpu_lite.counters.forward_graphs == 3  # one per reduction, for both sizes


def test_held_value_is_torchs_conversion() -> None:
    """xpu_lite.held_values.held_value, plain Python (it runs while tracing and while
    lowering), gives what a float16/bfloat16 tensor made from a float32 holds, infinities,
    NaN, signed zeros, subnormals and overflow to inf included, and an int32 wrapped to
    uint8/int8/int16."""
    import math
    import random

    from xpu_lite.held_values import held_value

    rng = random.Random(0)
    values = [0.1, 1e-3, 1 / 3, 65504.0, 65520.0, 70000.0, 3.4e38, 1e39, -2.5, math.nan, math.inf, -math.inf,
              1e-40, 5e-45, 0.0, -0.0] + [rng.uniform(-1e5, 1e5) * 10.0 ** rng.randint(-30, 30) for _ in range(5000)]
    for dtype in (torch.float16, torch.bfloat16):
        for value in values:
            single = torch.tensor(value, dtype=torch.float64).float()  # a double to float32, as C converts it
            want, got = single.to(dtype).item(), held_value(value, dtype)
            assert (math.isnan(want) and math.isnan(got)) or (want == got and math.copysign(1, want) == math.copysign(1, got)), \
                (value, dtype, want, got)
    for dtype in (torch.uint8, torch.int8, torch.int16):
        for value in list(range(-70000, 70000, 7)) + [2**31 - 1, -2**31]:
            assert held_value(value, dtype) == torch.tensor(value, dtype=torch.int32).to(dtype).item(), (value, dtype)
