"""Ops whose eager implementation rounds float16/bfloat16 steps inside one aten op, as
eager computes them: each step this rounds is one that eager keeps in a tensor or a
`scalar_t` of the dtype. policy.py lists them. Found by bitwise probes against eager on cpu
(2026-11-27): torch._decomp's same steps, fused into one kernel, stay in float32 between
them, and differed from eager in a quarter to a half of the float16 values.

- On every device (an explicit composite of ops on the dtype's tensors, or a kernel whose
  `scalar_t` arithmetic rounds each step on cpu and cuda alike):
  - logsumexp: `(x - max).exp()`, its sum, the log, + max (ReduceOps.cpp);
  - binary_cross_entropy_with_logits: `(1 - t) * x - log_sigmoid(x)`, with
    `(pos_weight - 1) * t + 1` and `* weight` (Loss.cpp);
  - soft_margin_loss: `log1p(exp(-x * t))` (Loss.cpp);
  - mse_loss: `d = x - t`, `d * d` (mse_kernel, mse_kernel_cuda);
  - binary_cross_entropy: `(t - 1) * max(log1p(-x), -100) - t * max(log(x), -100)`, then
    `* weight` (binary_cross_entropy_out_cpu/_cuda).
- On cpu only (cuda/xpu compute in float32, as torch._decomp's does):
  - log_softmax over the last dim: each row's sum of exponentials and its log kept as the
    dtype, then `(x - max) - log_sum` (_vec_log_softmax_lastdim);
  - logit: eps and `1 - eps` in the dtype, `z / (1 - z)` and its log rounded;
  - smooth_l1_loss in float16 and huber_loss in bfloat16: `|x - t|` and each step after
    it (their other dtype, and cuda/xpu, compute in float32, rounded once, as
    torch._decomp's);
  - softshrink compares `|x|` with lambd in float32, where torch._decomp's comparison
    converts lambd to the dtype, as eager's comparison ops do: float16's 0.3 is
    0.30004883, so softshrink(0.30004883, 0.3) was 0 instead of eager's 4.9e-5 (cuda/xpu
    read lambd in the dtype, as torch._decomp's).

The backward kernels of mse_loss, binary_cross_entropy and soft_margin_loss (every
device), and of logit and huber_loss (cpu), round their steps too, their
`2 / numel` or `1 / numel` in the dtype.

Each loss's reduction is the mean or sum of the dtype's loss tensor, as eager's
apply_loss_reduction: of its values rounded to the dtype (torch._decomp's fused them
unrounded into the mean). Mixed dtypes, float32 and the other backward ops keep torch._decomp's.
"""
from __future__ import annotations

from typing import Any

import torch

from .. import _torch_compat as compat
from ..held_values import held_value

aten = torch.ops.aten
_HALF = (torch.float16, torch.bfloat16)


def _half(*tensors: Any) -> torch.dtype | None:
    """The float16/bfloat16 dtype that all the given tensors (None skipped) share, else None."""
    dtypes = {t.dtype for t in tensors if t is not None}
    return next(iter(dtypes)) if len(dtypes) == 1 and dtypes <= set(_HALF) else None


def _held(dtype: torch.dtype) -> Any:
    """A float32 value as a `dtype` tensor holds it (a kernel rounds at the explicit cast)."""
    return lambda t: t.to(dtype).float()


def _reduced(loss: torch.Tensor, reduction: int) -> torch.Tensor:
    """apply_loss_reduction (0 none, 1 mean, 2 sum) of the dtype's loss tensor: its values
    as the tensor holds them (`.float()` rounds a fused value), summed in float32."""
    if reduction == 0:
        return loss
    values = loss.float()
    return (values.mean() if reduction == 1 else values.sum()).to(loss.dtype)


def _torch(op: torch._ops.OpOverload, *args: Any) -> Any:
    return compat.decomposition_table[op](*args)


def log_softmax(x: torch.Tensor, dim: int, half_to_float: bool) -> torch.Tensor:
    if x.device.type != "cpu" or _half(x) is None or half_to_float or compat.guard_or_true(x.numel() == 0) \
            or dim % max(x.dim(), 1) != max(x.dim(), 1) - 1:
        return _torch(aten._log_softmax.default, x, dim, half_to_float)
    x = x.contiguous()  # as eager's result, and torch._decomp's
    shifted = x.float() - torch.amax(x.float(), dim, keepdim=True)
    held = _held(x.dtype)
    return (shifted - held(held(torch.exp(shifted).sum(dim, keepdim=True)).log())).to(x.dtype)


def logsumexp(x: torch.Tensor, dim: Any, keepdim: bool = False) -> torch.Tensor:
    dims = tuple(dim) if isinstance(dim, (list, tuple)) else (dim,)
    if _half(x) is None or compat.guard_or_true(x.numel() == 0) or not dims:
        return _torch(aten.logsumexp.default, x, dim, keepdim)
    held = _held(x.dtype)
    maxes = torch.amax(x.float(), dims, keepdim=True)
    maxes = torch.masked_fill(maxes, maxes.abs() == float("inf"), 0)
    total = held(torch.sum(held(torch.exp(held(x.float() - maxes))), dims, keepdim))
    return (held(torch.log(total)) + (maxes if keepdim else torch.squeeze(maxes, dims))).to(x.dtype)


def binary_cross_entropy_with_logits(x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None,
                                     pos_weight: torch.Tensor | None = None, reduction: int = 1) -> torch.Tensor:
    dtype = _half(x, target, weight, pos_weight)
    if dtype is None:
        return _torch(aten.binary_cross_entropy_with_logits.default, x, target, weight, pos_weight, reduction)
    held, t = _held(dtype), target.float()
    log_sigmoid = held(torch.nn.functional.logsigmoid(x.float()))
    if pos_weight is not None:
        log_sigmoid = held(log_sigmoid * held(held(held(pos_weight.float() - 1) * t) + 1))
    loss = held(held(held(1 - t) * x.float()) - log_sigmoid)
    if weight is not None:
        loss = held(loss * weight.float())
    return _reduced(loss.to(dtype), reduction)


def soft_margin_loss(x: torch.Tensor, target: torch.Tensor, reduction: int = 1) -> torch.Tensor:
    dtype = _half(x, target)
    if dtype is None:
        return _torch(aten.soft_margin_loss.default, x, target, reduction)
    held = _held(dtype)
    return _reduced(torch.log1p(held(torch.exp(held(-x.float() * target.float())))).to(dtype), reduction)


def mse_loss(x: torch.Tensor, target: torch.Tensor, reduction: int = 1) -> torch.Tensor:
    dtype = _half(x, target)
    if dtype is None:
        return _torch(aten.mse_loss.default, x, target, reduction)
    difference = _held(dtype)(x.float() - target.float())
    return _reduced((difference * difference).to(dtype), reduction)


def binary_cross_entropy(x: torch.Tensor, target: torch.Tensor, weight: torch.Tensor | None = None,
                         reduction: int = 1) -> torch.Tensor:
    # eager checks its input (cpu raises, cuda's kernel asserts on the device); torch._decomp's
    # formula, Inductor's too, gives NaN or a finite loss instead
    torch._assert_async(((x >= 0) & (x <= 1)).all(), "all elements of input should be between 0 and 1")
    dtype = _half(x, target, weight)
    if dtype is None:
        return _torch(aten.binary_cross_entropy.default, x, target, weight, reduction)
    held, p, t = _held(dtype), x.float(), target.float()
    log_p, log_q = (torch.clamp_min(held(f(v)), -100) for f, v in ((torch.log, p), (torch.log1p, -p)))
    loss = held(held(held(t - 1) * log_q) - held(t * log_p))
    if weight is not None:
        loss = held(loss * weight.float())
    return _reduced(loss.to(dtype), reduction)


def logit(x: torch.Tensor, eps: float | None = None) -> torch.Tensor:
    if x.device.type != "cpu" or _half(x) is None:
        return _torch(aten.logit.default, x, eps)
    held, z = _held(x.dtype), x.float()
    if eps is not None and eps >= 0:
        low = held_value(eps, x.dtype)
        z = torch.clamp(z, low, held_value(1 - low, x.dtype))
    return torch.log(held(z / held(1 - z))).to(x.dtype)


def smooth_l1_loss(x: torch.Tensor, target: torch.Tensor, reduction: int = 1, beta: float = 1.0) -> torch.Tensor:
    # eager's check, which neither its meta nor torch._decomp's formula makes
    torch._check(beta >= 0, lambda: "smooth_l1_loss does not support negative values for beta.")
    return _piecewise_loss(aten.smooth_l1_loss.default, x, target, reduction, beta, torch.float16, lambda z, b, held: (
        torch.where(z < b, held(held(held(0.5 * z) * z) / b), z - held_value(0.5 * b, torch.float16))))


def huber_loss(x: torch.Tensor, target: torch.Tensor, reduction: int = 1, delta: float = 1.0) -> torch.Tensor:
    return _piecewise_loss(aten.huber_loss.default, x, target, reduction, delta, torch.bfloat16, lambda z, d, held: (
        torch.where(z < d, held(held(0.5 * z) * z), d * held(z - held_value(0.5 * d, torch.bfloat16)))))


def _piecewise_loss(op: torch._ops.OpOverload, x: torch.Tensor, target: torch.Tensor, reduction: int, parameter: float,
                    stepped: torch.dtype, steps: Any) -> torch.Tensor:
    """smooth_l1_loss's and huber_loss's: on cpu in the `stepped` dtype, `steps(z, p, held)`
    of z = |x - t| and the parameter p, both in the dtype; elsewhere torch._decomp's
    (float32, rounded once); either reduced as the dtype's loss tensor."""
    dtype = _half(x, target)
    if dtype is None:
        return _torch(op, x, target, reduction, parameter)
    if x.device.type != "cpu" or dtype is not stepped:
        return _reduced(_torch(op, x, target, 0, parameter), reduction)
    held = _held(dtype)
    z = held((x.float() - target.float()).abs())
    return _reduced(steps(z, held_value(parameter, dtype), held).to(dtype), reduction)


def softshrink(x: torch.Tensor, lambd: float = 0.5) -> torch.Tensor:
    if x.device.type != "cpu" or _half(x) is None:
        return _torch(aten.softshrink.default, x, lambd)
    value = x.float()
    shrunk = torch.where(value > lambd, value - lambd, torch.where(value < -lambd, value + lambd, value * 0))
    return shrunk.to(x.dtype)


def mse_loss_backward(grad: torch.Tensor, x: torch.Tensor, target: torch.Tensor, reduction: int) -> torch.Tensor:
    """`norm * (x - t) * grad`, norm (2 / numel for the mean, else 2) in the dtype."""
    dtype = _half(grad, x, target)
    if dtype is None:
        return _torch(aten.mse_loss_backward.default, grad, x, target, reduction)
    held = _held(dtype)
    norm = held(_size_ratio(2, x.numel() if reduction == 1 else 1, x.device))
    return held(held(norm * held(x.float() - target.float())) * grad.float()).to(dtype)


def binary_cross_entropy_backward(grad: torch.Tensor, x: torch.Tensor, target: torch.Tensor,
                                  weight: torch.Tensor | None = None, reduction: int = 1) -> torch.Tensor:
    """`grad * (x - t) / max((1 - x) * x, 1e-12)`, then `* weight` and `/ numel` for the mean."""
    dtype = _half(grad, x, target, weight)
    if dtype is None:
        return _torch(aten.binary_cross_entropy_backward.default, grad, x, target, weight, reduction)
    held, p = _held(dtype), x.float()
    result = held(held(grad.float() * held(p - target.float())) / torch.clamp_min(held(held(1 - p) * p), held_value(1e-12, dtype)))
    if weight is not None:
        result = held(result * weight.float())
    if reduction == 1:
        result = held(result / x.numel())
    return result.to(dtype)


def soft_margin_loss_backward(grad: torch.Tensor, x: torch.Tensor, target: torch.Tensor, reduction: int) -> torch.Tensor:
    """Eager's composite: z = exp(-t * x), `t * z * -norm / (1 + z) * grad`, -norm (-1 /
    numel for the mean, else -1) in the dtype."""
    dtype = _half(grad, x, target)
    if dtype is None:
        return _torch(aten.soft_margin_loss_backward.default, grad, x, target, reduction)
    held, t = _held(dtype), target.float()
    z = held(torch.exp(held(-t * x.float())))
    norm = held(_size_ratio(-1, x.numel() if reduction == 1 else 1, x.device))
    return held(held(held(held(t * z) * norm) / held(1 + z)) * grad.float()).to(dtype)


def logit_backward(grad: torch.Tensor, x: torch.Tensor, eps: float | None = None) -> torch.Tensor:
    """On cpu, `grad / (x * (1 - x))` with eps and `1 - eps` in the dtype (bfloat16's
    `1 - 0.001` is 1.0: the gradient at 1.0 is inf, not 0)."""
    if x.device.type != "cpu" or _half(grad, x) is None:
        return _torch(aten.logit_backward.default, grad, x, eps)
    held, z = _held(x.dtype), x.float()
    slope = held(grad.float() / held(z * held(1 - z)))
    if eps is None or eps < 0:
        return torch.where((z < 0) | (z > 1), float("nan"), slope).to(x.dtype)
    low = held_value(eps, x.dtype)
    return torch.where((z < low) | (z > held_value(1 - low, x.dtype)), 0.0, slope).to(x.dtype)


def huber_loss_backward(grad: torch.Tensor, x: torch.Tensor, target: torch.Tensor, reduction: int,
                        delta: float) -> torch.Tensor:
    """On cpu in float16/bfloat16, eager's vectorized body: `norm * c * grad`, c the
    difference d = x - t clipped to [-delta, delta] (`delta` where d > 0 and |d| >= delta),
    each step rounded, norm (1 / numel for the mean, else 1) and delta in the dtype. Eager's
    scalar loop, which computes the elements past a row's last whole pair of vectors,
    multiplies in another order (`norm * grad * delta`, delta unrounded): not matched."""
    dtype = _half(grad, x, target)
    if x.device.type != "cpu" or dtype is None:
        return _torch(aten.huber_loss_backward.default, grad, x, target, reduction, delta)
    held, d = _held(dtype), held_value(delta, dtype)
    norm = held(_size_ratio(1, x.numel() if reduction == 1 else 1, x.device))
    difference = held(x.float() - target.float())
    clipped = torch.where(difference.abs() >= d, torch.where(difference > 0, d, -d), difference)
    return held(held(norm * clipped) * grad.float()).to(dtype)


def _size_ratio(numerator: float, count: Any, device: torch.device) -> torch.Tensor:
    """numerator / count as a float32 0-dim tensor: eager's double, through float32; a
    tensor, not a Python float, where count is symbolic (a SymFloat would become float64
    host ops: normalization.py)."""
    return torch.scalar_tensor(numerator, dtype=torch.float32, device=device) / count
