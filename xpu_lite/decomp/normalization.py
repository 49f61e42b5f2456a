"""Normalizations in regions as eager's kernels compute them. policy.py lists them.

batch_norm's inference on cpu (batch_norm_inference): eager folds the running statistics
into a scale and a shift per channel in float32, `alpha = w * rsqrt(var + eps)` and
`beta = b - mean * alpha`, then computes `x * alpha + beta`; gcc contracts both into fmas.
torch._decomp's `(x - mean) * (1 / sqrt(var + eps)) * w + b` differed from eager's in 1886
of 4096 float32 values; this is bitwise eager's for contiguous and channels-last inputs.

group_norm's backward: in float32 for float16 and bfloat16 inputs, rounded once, and with
1 / (HxW * channels per group) a float32 0-dim tensor where the sizes are symbolic.

torch._decomp's rounds its per-channel sums to the input's dtype before it sums them again
(a bfloat16 bias gradient ~3x eager's error against float64, found by tools/vision_models.py's
UNet), and its `s = 1.0 / (HxW * cpg)` is a SymFloat under dynamic shapes, which
AOTAutograd's tensorify_python_scalars turns into float64 tensor ops on the host: eager
calls in every backward graph (on cpu, where they are not another device's, strict=True
refused them). Eager's kernels compute in float32, their accumulation type for float32,
float16 and bfloat16. Otherwise the steps are torch._decomp's, op for op.

Mixed dtypes (a float16/bfloat16 input with float32 parameters: autocast's `layer_norm`,
`group_norm` and `batch_norm` after a bfloat16 `linear` or convolution): eager's kernels
return float32 mean and rstd, which the backward reads. torch._refs/_decomp round them to
the input's dtype (layer and batch norm on cpu, group norm everywhere, as their metas say),
and the backward's `x - mean` no longer sums to zero over a row: the input gradient of
`layer_norm(...).sum()`, which eager computes as nearly zero, came out at bfloat16's
rounding of the row (4e-3 where eager's was 3e-16). float32_statistics keeps them float32.
"""
from __future__ import annotations

import functools
from typing import Any

import torch

from .. import _torch_compat as compat
from .layouts import BATCH_NORMS, output_in_suggested_format

aten = torch.ops.aten


def native_group_norm_backward(grad_output: torch.Tensor, input: torch.Tensor, mean: torch.Tensor, rstd: torch.Tensor,
                               gamma: torch.Tensor | None, N: Any, C: Any, HxW: Any, group: Any,
                               output_mask: list[bool]) -> Any:
    cpg = C // group
    low = input.dtype in (torch.float16, torch.bfloat16)
    if not low and (isinstance(HxW * cpg, int) or input.dtype == torch.float64):
        return compat.decomposition_table[aten.native_group_norm_backward.default](
            grad_output, input, mean, rstd, gamma, N, C, HxW, group, output_mask)
    torch._check(C == cpg * group, lambda: f"Expect number of channels {C} to be evenly-divisible by number of groups {group}")
    dtype, gamma_dtype = input.dtype, None if gamma is None else gamma.dtype
    if low:
        grad_output, input, mean, rstd = (t.float() for t in (grad_output, input, mean, rstd))
        gamma = None if gamma is None else gamma.float()
    ds = torch.mul(grad_output, input).view(N, C, HxW).sum(dim=[2])
    db = grad_output.view(N, C, HxW).sum(dim=[2])
    d_input = d_gamma = d_bias = None
    if output_mask[0]:
        s = torch.scalar_tensor(HxW * cpg, dtype=torch.float32, device=input.device).reciprocal()
        if gamma is not None:
            ds_val = torch.mul(ds, gamma.unsqueeze(0)).reshape(N, group, cpg).sum(2)
            db_val = torch.mul(db, gamma.unsqueeze(0)).reshape(N, group, cpg).sum(2)
            c1 = torch.mul(rstd.unsqueeze(-1), gamma.reshape(1, group, cpg))
        else:
            ds_val = ds.reshape(N, group, cpg).sum(2)
            db_val = db.reshape(N, group, cpg).sum(2)
            c1 = torch.mul(rstd.unsqueeze(-1), torch.ones((1, group, cpg), device=rstd.device))
        c2 = (db_val * mean - ds_val) * rstd * rstd * rstd * s
        c3 = -c2 * mean - db_val * rstd * s
        d_input = (torch.mul(grad_output.reshape(N, group, cpg, HxW), c1.unsqueeze(-1))
                   + torch.mul(input.reshape(N, group, cpg, HxW), c2[..., None, None]) + c3[..., None, None])
        d_input = d_input.reshape(input.shape).to(dtype)
    if output_mask[1]:
        d_gamma = ((ds.view(N, group, cpg) - db.view(N, group, cpg) * mean.unsqueeze(-1)) * rstd.unsqueeze(-1)).sum(dim=[0])
        d_gamma = d_gamma.reshape(C).to(gamma_dtype or dtype)
    if output_mask[2]:
        d_bias = db.sum(dim=[0]).to(gamma_dtype or dtype)
    return d_input, d_gamma, d_bias


def batch_norm_inference(input: torch.Tensor, weight: torch.Tensor | None, bias: torch.Tensor | None,
                         running_mean: torch.Tensor, running_var: torch.Tensor, momentum: float, eps: float) -> Any:
    """`_native_batch_norm_legit_no_training` as eager's cpu kernel computes it (the module
    doc), for float32 statistics and parameters; torch._decomp's elsewhere: eager's cuda
    runs cuDNN (or its own kernel) and xpu oneDNN, whose orders are not this. Inputs laid
    out neither contiguous nor channels-last take another path in eager's cpu kernel
    (`1 / at::sqrt(var + eps)`, not contracted), 1 ulp from this in about half the values."""
    params = [t for t in (weight, bias, running_mean, running_var) if t is not None]
    if (input.device.type != "cpu" or input.dim() < 2 or input.dtype not in (torch.float32, torch.float16, torch.bfloat16)
            or any(t.dtype != torch.float32 for t in params)):
        return compat.decomposition_table[aten._native_batch_norm_legit_no_training.default](
            input, weight, bias, running_mean, running_var, momentum, eps)
    alpha = torch.rsqrt(running_var + eps)
    if weight is not None:
        alpha = alpha * weight.flatten()
    beta = torch.neg(running_mean * alpha) if bias is None else torch.ops.prims.fma(torch.neg(running_mean), alpha, bias.flatten())
    per_channel = [-1] + [1] * (input.dim() - 2)
    output = torch.ops.prims.fma(input.to(torch.float32), alpha.view(per_channel), beta.view(per_channel))
    empty = input.new_zeros((0,))  # eager's cpu kernel returns empty statistics in inference
    return output.to(input.dtype), empty, empty.clone()


def _mixed(input: torch.Tensor, args: tuple[Any, ...], kwargs: dict[str, Any]) -> bool:
    """A float16/bfloat16 input with a float32 parameter: eager's kernels keep float32 statistics."""
    return input.dtype in (torch.float16, torch.bfloat16) and any(
        isinstance(a, torch.Tensor) and a.dtype == torch.float32 for a in (*args, *kwargs.values()))


def float32_statistics(decomposition: Any) -> Any:
    """A layer/group/batch norm `decomposition` (input first, output first) with float32
    statistics where eager's kernels keep them so: a float16/bfloat16 input and a float32
    parameter (the module doc). It runs on the input converted to float32, which is the
    first step of torch._decomp's own (their computation dtype), and rounds the output once."""
    def decompose(input: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
        if _mixed(input, args, kwargs):
            output, *rest = decomposition(input.to(torch.float32), *args, **kwargs)
            return (output.to(input.dtype), *rest)
        return decomposition(input, *args, **kwargs)

    return decompose


def with_float32_statistics(op: torch._ops.OpOverload) -> Any:
    """torch._decomp's (or torch._refs') decomposition of norm `op` with float32 statistics
    (float32_statistics), a batch norm's output laid out as eager's kernels allocate it: what
    regions decompose it to (policy.py), and what a kept call's statistics are traced as."""
    decomposition = float32_statistics(compat.decomposition_table[op])
    if op in (aten.native_layer_norm.default, aten.native_group_norm.default):
        return decomposition
    return output_in_suggested_format(decomposition)


@functools.lru_cache(maxsize=None)
def statistics_fake_rules(device_type: str) -> dict[torch._ops.OpOverload, Any]:
    """What the traced graph says of a kept norm's statistics where eager's kernels keep them
    float32 (the module doc; torch's metas say the input's dtype): group norm on every
    device, layer and batch norm on cpu (their cuda/xpu metas say float32 already). Without
    it a kept layer_norm's float32 mean reached a backward kernel compiled for bfloat16
    (`keep_ops=["aten.native_layer_norm"]`, mixed dtypes: the interpreter raised). Other
    calls: NotImplemented, what was there before."""
    ops = [aten.native_group_norm.default]
    if device_type == "cpu":
        ops += [aten.native_layer_norm.default, aten._batch_norm_with_update.default,
                aten._batch_norm_with_update_functional.default,
                *(op for op in BATCH_NORMS if op is not aten._native_batch_norm_legit_no_training.default)]

    def rule(op: torch._ops.OpOverload) -> Any:
        decomposition = with_float32_statistics(op)

        def mixed_only(input: torch.Tensor, *args: Any, **kwargs: Any) -> Any:
            return decomposition(input, *args, **kwargs) if _mixed(input, args, kwargs) else NotImplemented

        return mixed_only

    return {op: rule(op) for op in ops}
