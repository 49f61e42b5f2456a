"""Complex products and sums in regions as float math on (real, imaginary) pairs.

Kernels compute real dtypes only, so `x * y` of complex64 tensors (the rotary embedding of
LLaMA's reference code and torchtitan: `view_as_complex(q) * freqs_cis`) was an eager call
between kernels, as in Inductor, which generates no code for complex ops. Here the product
is eager's formula on the float32 views of its operands, `view_as_real`:

    (a + bi)(c + di) = (ac - bd) + (ad + bc)i

each product rounded, then one add, as eager's vectorized cpu body computes it
(Vectorized<complex<float>>'s products and hsub; its scalar loop, over rows shorter than
two vectors and their tails, contracts to fma(a, c, -(b * d)): an ulp apart there). A
real operand is a complex one with imaginary part +0.0, as TensorIterator promotes it.
The parts are placed by a cat on a last dim of 2 and viewed as complex again; a sum or a
difference is the float op of the pairs (exact). The complex views between
`view_as_complex` and `view_as_real` are then replaced by views of the float pairs
(lowering/complex_pairs.py), so that the product fuses with its neighbours. An operand
with its conjugate bit set (the backward's `grad * other.conj()`) is read as its data's
pairs with the imaginary part negated. Other dtypes (complex32, complex128), and operands
on two devices (a cpu scalar), keep the op.
"""
from __future__ import annotations

from typing import Any

import torch

from .. import _torch_compat as compat

aten = torch.ops.aten


def _pair(t: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(real, imaginary) float32 parts of a complex64 tensor, or of a float32 one promoted,
    each with a last dim of 1 (slices of the pairs: a cat of values so shaped is one kernel
    with the products it places, lowering/indexing.py)."""
    if not t.is_complex():
        return t.unsqueeze(-1), torch.zeros_like(t).unsqueeze(-1)
    if t.is_conj():  # view_as_real refuses a conjugate view: read the data, negate its imaginary part
        pairs = torch.view_as_real(aten._conj.default(t))
        return pairs[..., 0:1], -pairs[..., 1:2]
    pairs = torch.view_as_real(t)
    return pairs[..., 0:1], pairs[..., 1:2]


def mul(x: Any, y: Any) -> Any:
    """mul.Tensor of complex64 tensors (or one complex64 and one float32) as eager's
    formula on float pairs; any other call keeps the op (NotImplemented)."""
    if not (isinstance(x, torch.Tensor) and isinstance(y, torch.Tensor)):
        return NotImplemented
    if (not (x.is_complex() or y.is_complex()) or {x.dtype, y.dtype} - {torch.complex64, torch.float32}
            or x.device != y.device):  # (a cpu scalar's pairs are no scalar a kernel on another device reads)
        return NotImplemented
    (a, b), (c, d) = _pair(x), _pair(y)
    real, imag = a * c - b * d, a * d + b * c
    # laid out as TensorIterator lays out eager's result (as the float products are: their
    # operands' strides are the complex ones doubled): the pairs placed in its memory order
    order = compat.elementwise_output_perm(real.squeeze(-1))
    if order == sorted(order):
        return torch.view_as_complex(torch.cat([real, imag], -1))
    inverse = sorted(range(len(order)), key=order.__getitem__)
    pairs = torch.cat([real.permute([*order, len(order)]), imag.permute([*order, len(order)])], -1)
    return torch.view_as_complex(pairs).permute(inverse)


def _sum(op: Any) -> Any:
    """add.Tensor / sub.Tensor of two complex64 tensors as the float op of their pairs
    (exact: each part one add, as eager's); with an alpha, a real operand or a conjugate
    view, the op is kept (NotImplemented). A gradient that accumulates complex values (a
    complex tensor read twice) is such a sum."""
    def complex_sum(x: Any, y: Any, *, alpha: Any = None) -> Any:
        if alpha not in (None, 1) or not all(isinstance(t, torch.Tensor) and t.dtype is torch.complex64
                                              and not t.is_conj() for t in (x, y)) or x.device != y.device:
            return NotImplemented
        return torch.view_as_complex(op(torch.view_as_real(x), torch.view_as_real(y)))

    return complex_sum


add, sub = _sum(torch.add), _sum(torch.sub)
