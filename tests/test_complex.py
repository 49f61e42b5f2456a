"""Complex products and sums in regions as float math on (real, imaginary) pairs.

decomp/complex_mul.py computes `x * y`, `x + y` and `x - y` of complex64 tensors on their
float32 views, and lowering/complex_pairs.py replaces the complex views between
`view_as_complex` and `view_as_real` by views of the float pairs, so that the rotary
embedding of LLaMA's reference code and torchtitan (`view_as_complex(q) * freqs_cis`) is
one kernel, where Inductor, which generates no code for complex ops, runs it eagerly.
Compared with eager within float32 rounding: eager's cpu kernel has two paths (a
vectorized one computes a*c - b*d, its scalar tail fma(a, c, -(b*d))), ours the first.
"""
from __future__ import annotations

import pytest
import torch

import xpu_lite
from xpu_lite.report import capture

from .conftest import assert_bitwise


def rope(x: torch.Tensor, freqs_cis: torch.Tensor) -> torch.Tensor:
    """torchtitan's apply_rotary_emb for one tensor: (batch, seq, heads, head_dim)."""
    xc = torch.view_as_complex(x.float().reshape(*x.shape[:-1], -1, 2))
    freqs = freqs_cis[: x.shape[1]].view(1, x.shape[1], 1, xc.shape[-1])
    return torch.view_as_real(xc * freqs).flatten(3).type_as(x)


def products(x: torch.Tensor, freqs_cis: torch.Tensor):
    """A complex result, a complex times a real tensor, transposed operands (eager's
    layout), a sum and a difference, and a conjugate operand."""
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], -1, 2))
    freqs = freqs_cis[: x.shape[1]].view(1, x.shape[1], 1, -1)
    t = xc.transpose(1, 2)
    return (xc * freqs, xc * x[..., ::2], t * t, torch.view_as_real(xc + freqs - xc * xc),
            torch.view_as_real(xc * freqs.conj()))


def _freqs(device: str) -> torch.Tensor:
    return torch.polar(torch.ones(16, 4, device=device), torch.randn(16, 4, device=device))


def _as_real(t: torch.Tensor) -> torch.Tensor:
    return torch.view_as_real(t) if t.is_complex() else t


def _eager_ops(graphs) -> set[str]:
    return {d.op for graph in graphs for d in graph.fallbacks}


def _kernel_ops(graphs) -> set[str]:
    return {d.op for graph in graphs for d in graph.decisions if d.kind.value == "kernel"}


def _close_to_eager(actual: torch.Tensor, expected: torch.Tensor, reference: torch.Tensor) -> None:
    """Eager's dtype, shape and strides; within float32 rounding of eager, and no further
    from the float64 reference than eager plus one rounding of the result's dtype."""
    assert (actual.dtype, actual.shape, actual.stride()) == (expected.dtype, expected.shape, expected.stride())
    a, e, r = _as_real(actual).double(), _as_real(expected).double(), _as_real(reference).double()
    eps = torch.finfo(_as_real(expected).dtype).eps
    torch.testing.assert_close(a, e, rtol=2 * eps, atol=2 * eps * r.abs().max().item())
    assert bool(((a - r).abs() <= (e - r).abs() + eps * r.abs().clamp(min=1)).all())


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
@pytest.mark.parametrize("training", [False, True], ids=["inference", "training"])
def test_rotary_embedding_of_complex_freqs_is_one_kernel(device: str, dtype: torch.dtype, training: bool) -> None:
    """torchtitan's rotary embedding: one graph for every sequence length; the only eager
    calls left are the `view_as_real` of the complex `freqs_cis` input (a view) and, in
    training, the conjugate of it the backward reads (`_conj` and its copy, freqs-sized);
    every product is a kernel's. Before 2026-12-01 the product, `view_as_complex` and
    `view_as_real` were eager calls between a kernel each side (the bfloat16 casts)."""
    freqs_cis = _freqs(device)
    compiled = torch.compile(rope, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for seq in (5, 7, 9):
            x = torch.randn(2, seq, 3, 8, device=device).to(dtype)
            ours, eager, reference = (x.clone().requires_grad_(training) for _ in range(3))
            got, expected = compiled(ours, freqs_cis), rope(eager, freqs_cis)
            _close_to_eager(got, expected, rope(reference.double(), freqs_cis.to(torch.complex128)))
            if training:
                grad = torch.randn_like(expected)
                got.backward(grad)
                expected.backward(grad)
                rope(reference.double(), freqs_cis.to(torch.complex128)).backward(grad.double())
                _close_to_eager(ours.grad, eager.grad, reference.grad)
    assert xpu_lite.counters.forward_graphs == 1
    expected_eager = {"aten.view_as_real.default"} | ({"aten._conj.default", "aten.clone.default"} if training else set())
    assert _eager_ops(reports) == expected_eager
    assert {"aten.cat.default", "aten.sub.Tensor", "aten.add.Tensor"} <= _kernel_ops(reports)
    # a kernel per graph: a bfloat16 input's float() is computed where the products read it
    # through the reshape ([..., 8] as [..., 4, 2]: space.last_dim_split), never stored
    assert xpu_lite.counters.kernels_compiled == 1 + training, xpu_lite.counters


def test_complex_products_sums_and_layouts(device: str) -> None:
    """Complex results (eager's view of the pairs), a complex times a real tensor (its
    imaginary part +0.0, as TensorIterator promotes it), transposed operands laid out as
    eager lays them out, sums, differences and a conjugate operand."""
    freqs_cis = _freqs(device)
    compiled = torch.compile(products, backend="xpu_lite", dynamic=True)
    for seq in (5, 7):
        x = torch.randn(2, seq, 3, 8, device=device)
        got, expected = compiled(x, freqs_cis), products(x, freqs_cis)
        reference = products(x.double(), freqs_cis.to(torch.complex128))
        for a, e, r in zip(got, expected, reference):
            _close_to_eager(a, e.to(a.dtype), r)
    graphs = xpu_lite.explain(products, x, freqs_cis, dynamic=True).graphs
    assert "aten.cat.default" in _kernel_ops(graphs)
    assert not {"aten.mul.Tensor", "aten.add.Tensor", "aten.sub.Tensor"} & _eager_ops(graphs), _eager_ops(graphs)


def test_complex_ops_outside_regions_stay_eagers_in_lite_mode(device: str) -> None:
    """Lite mode decomposes nothing outside regions: the complex product is eager's own
    call, bitwise; inside a region it is float math as in the default mode, and
    `keep_ops` keeps it eager's there."""
    freqs_cis = _freqs(device)
    x = torch.randn(2, 5, 3, 8, device=device)
    lite = torch.compile(rope, backend="xpu_lite", mode="lite", dynamic=True)
    assert_bitwise(lite(x, freqs_cis), rope(x, freqs_cis))
    assert "aten.mul.Tensor" in _eager_ops(xpu_lite.explain(rope, x, freqs_cis, mode="lite", dynamic=True).graphs)

    def in_region(x, freqs_cis):
        with xpu_lite.compile_region():
            return rope(x, freqs_cis)

    torch._dynamo.reset()
    got = torch.compile(in_region, backend="xpu_lite", mode="lite", dynamic=True)(x, freqs_cis)
    _close_to_eager(got, rope(x, freqs_cis), rope(x.double(), freqs_cis.to(torch.complex128)))
    graphs = xpu_lite.explain(in_region, x, freqs_cis, mode="lite", dynamic=True).graphs
    assert _eager_ops(graphs) == {"aten.view_as_real.default"}, graphs
    torch._dynamo.reset()  # keep_ops keeps the product whole in the default mode: eager's call
    kept = torch.compile(rope, backend="xpu_lite", options={"keep_ops": ["aten.mul.Tensor"]}, dynamic=True)
    assert_bitwise(kept(x, freqs_cis), rope(x, freqs_cis))
