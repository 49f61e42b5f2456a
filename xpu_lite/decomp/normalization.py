"""group_norm's backward in regions as eager's kernels compute it: in float32 for float16
and bfloat16 inputs, rounded once, and with 1 / (HxW * channels per group) a float32 0-dim
tensor where the sizes are symbolic. policy.py lists it.

torch._decomp's rounds its per-channel sums to the input's dtype before it sums them again
(a bfloat16 bias gradient ~3x eager's error against float64, found by tools/vision_models.py's
UNet), and its `s = 1.0 / (HxW * cpg)` is a SymFloat under dynamic shapes, which
AOTAutograd's tensorify_python_scalars turns into float64 tensor ops on the host: eager
calls in every backward graph (on cpu, where they are not another device's, strict=True
refused them). Eager's kernels compute in float32, their accumulation type for float32,
float16 and bfloat16. Otherwise the steps are torch._decomp's, op for op.
"""
from __future__ import annotations

from typing import Any

import torch

from .. import _torch_compat as compat

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
