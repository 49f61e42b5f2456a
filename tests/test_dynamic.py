"""Dynamic shapes: computed sizes, FloorDiv, data-dependent sizes, SymInt arguments."""
from __future__ import annotations

import contextlib
import math

import pytest
import torch

import xpu_lite
from tests.conftest import assert_bitwise


def compile_lite(fn):
    return torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)


def run_sizes(fn, make_inputs, sizes) -> list[str]:
    compiled = compile_lite(fn)
    sources: list[str] = []
    for n in sizes:
        args = make_inputs(n)
        result, codes = xpu_lite.run_and_get_code(compiled, *args) if not sources else (compiled(*args), [])
        sources += codes
        assert_bitwise(result, fn(*args))
    assert xpu_lite.counters.forward_graphs == 1, "recompiled"
    return sources


def test_view_with_computed_sizes(device: str) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape[0] * 2, x.shape[1] // 2).t().reshape(-1) * 3

    (source,) = run_sizes(fn, lambda n: (torch.randn(n, 6, device=device),), (3, 4, 7))
    assert "torch.ops.aten.view.default(" in source


def test_strided_slice_floordiv(device: str) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        y = x[:, ::3]  # (s + 2) // 3 columns
        return y * 2 + y.shape[1]  # (reshape would add a Dynamo guard that recompiles, aot_eager too)

    (source,) = run_sizes(fn, lambda n: (torch.randn(4, n, device=device),), (5, 9, 10, 14))
    assert "//" in source  # (s + 2) // 3 computed in Python


def test_data_dependent_size_assert_fires(device: str) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        nz = torch.nonzero(x)
        torch._check(nz.shape[0] >= 2)
        return nz * 2

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = compile_lite(fn)
        x = torch.tensor([1.0, 0.0, 2.0, 3.0], device=device)
        result, (source,) = xpu_lite.run_and_get_code(compiled, x)
        assert_bitwise(result, fn(x))
        assert "u0 = " in source and "raise RuntimeError" in source
        with pytest.raises(RuntimeError, match="runtime assertion failed: u0 >= 2"):
            compiled(torch.tensor([0.0, 0.0, 0.0, 5.0, 0.0], device=device))


def test_item_scalar_is_bound_at_run_time(device: str) -> None:
    def fn(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
        return x * k.item() + 1

    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        compiled = compile_lite(fn)
        for value in (2, 5):
            x, k = torch.randn(4, device=device), torch.tensor(value, device=device)
            assert_bitwise(compiled(x, k), fn(x, k))


def gelu_tanh(x: torch.Tensor) -> torch.Tensor:  # GPT-2's "gelu_new", as transformers writes it
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def scaled_by_item(x: torch.Tensor, k: torch.Tensor) -> torch.Tensor:
    return x * (k.item() / 3.0) + 1


@pytest.mark.parametrize("case", ["python_float_global", "float_item"])
def test_python_float_math_is_eager_bitwise(device: str, case: str) -> None:
    """dynamic=True makes Python floats (math.pi, a float tensor's item()) inputs, and
    AOTAutograd's tensorify_python_scalars turns their math into float64 tensor math. That
    pass looks for aten._local_scalar_dense: lite mode must not keep aten.item whole (it did:
    math.pi was then specialized and rounded to float32, one ulp off eager)."""
    with torch._dynamo.config.patch(capture_scalar_outputs=True):
        if case == "python_float_global":
            compiled = compile_lite(gelu_tanh)
            for n in (8, 13):
                x = torch.randn(3, n, device=device)
                assert_bitwise(compiled(x), gelu_tanh(x))
        else:
            compiled = compile_lite(scaled_by_item)
            for value in (0.1, 7.3):
                x, k = torch.randn(5, device=device), torch.tensor(value, dtype=torch.float64, device=device)
                assert_bitwise(compiled(x, k), scaled_by_item(x, k))
    assert xpu_lite.counters.forward_graphs == 1, "recompiled"


def test_symint_scalar_arguments(device: str) -> None:
    def fn(x: torch.Tensor, n: int) -> torch.Tensor:
        return x.narrow(0, 0, n) * n + x.shape[0]

    compiled = compile_lite(fn)
    for n in (2, 3, 4):
        x = torch.randn(n + 3, 16, device=device)  # never square: duck sizing would tie the dims
        assert_bitwise(compiled(x, n), fn(x, n))
    assert xpu_lite.counters.forward_graphs == 1


def test_a_tensor_filled_with_an_int_argument_is_a_kernel(device: str) -> None:
    """`torch.full`/`full_like`/`new_full` of an int argument, a symbol under dynamic=True
    (a padding id passed in, a gather's index made of one): the kernel takes it as an
    int64 argument and converts it once, as eager does (float16/bfloat16 included). Before
    2026-11-28 such a fill ran eagerly ("needs a fill value that is a kernel literal")."""
    def fn(x: torch.Tensor, k: int) -> tuple[torch.Tensor, ...]:
        return (torch.full((x.shape[0],), k) * x[:, 0], torch.full_like(x, k * 1000 + 1, dtype=torch.float16),
                x.new_full((3,), k, dtype=torch.bfloat16), x.gather(0, torch.full((1, x.shape[1]), k - 3, device=x.device)))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for k in (3, 5, 9):
        x = torch.randn(8, 4, device=device)
        assert_bitwise(compiled(x, k), fn(x, k))
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0


def test_a_tensor_filled_with_a_float_of_sizes_is_a_kernel(device: str) -> None:
    """`torch.full(shape, n / 3)` where n is a size: a float symbol under dynamic=True. The
    wrapper computes it in float64, the kernel takes it as float32, and float16/bfloat16
    round from that, as eager's fill converts the double to float first. An integer tensor
    filled so needs the double itself (truncated): it runs eagerly, and says so. Before
    2026-11-29 every such fill ran eagerly."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        n = x.shape[1]
        return (torch.full((x.shape[0], 2), n / 3, device=x.device) + x[:, :2], torch.full_like(x, n / 7, dtype=torch.float16),
                x.new_full((3,), x.shape[0] * 0.1, dtype=torch.bfloat16), torch.full((2,), n / 3, dtype=torch.int64, device=x.device))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (5, 11, 31):
        x = torch.randn(n + 2, n, device=device)
        assert_bitwise(compiled(x), fn(x))
    assert xpu_lite.counters.forward_graphs == 1
    filled = {d.node: d for g in xpu_lite.explain(fn, x, dynamic=True).graphs for d in g.decisions if d.op.startswith("aten.full")
              or d.op.startswith("aten.new_full")}
    fallbacks = [d.why() for d in filled.values() if d.kind is xpu_lite.lowering.DecisionKind.FALLBACK]
    assert len(fallbacks) == 1 and "float symbol filling a floating tensor" in fallbacks[0], filled


def test_size_math_that_may_be_negative_floors_as_python(device: str) -> None:
    """roll by more than the size: its decomposition's `(size - shift) % size` is negative
    before Python's floored %, which Triton's truncating % kept negative; the kernel's
    index_select then read out of range (IndexOutOfRange, before 2026-11-28). Such size
    math is computed by the wrapper, in Python."""
    def fn(x: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return x.roll(7, 1) * 2, x.roll(-9, 0) + 1

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (3, 4, 6):
        x = torch.randn(n, n + 1, device=device)
        assert_bitwise(compiled(x), fn(x))
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0


def test_zero_recompiles_over_five_sizes(device: str) -> None:
    def fn(x: torch.Tensor) -> torch.Tensor:
        h = torch.nn.functional.layer_norm(x, x.shape[-1:])
        return torch.softmax(h @ h.transpose(-1, -2), dim=-1).sum(-1)

    run_sizes(fn, lambda n: (torch.randn(2, n, 8, device=device),), (3, 5, 8, 13, 21))


def _masked_select_terms(x: torch.Tensor) -> torch.Tensor:
    return torch.masked_select(x, x > 0).sum() + x[x < 0].pow(2).sum()  # gradient: masked_scatter of u0 values


def _masked_rows_log_softmax(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.log_softmax(x[x[:, 0] > 0], -1)  # u0 rows of bfloat16


@pytest.mark.parametrize("fn, dtype", [(_masked_select_terms, torch.float32), (_masked_rows_log_softmax, torch.bfloat16)],
                         ids=["masked_scatter", "half_log_softmax"])
def test_default_mode_decompositions_take_data_dependent_sizes(device: str, fn, dtype: torch.dtype) -> None:
    """Decompositions that choose by whether a tensor is empty must not guard on a size that
    only the data decides: they raised GuardOnDataDependentSymNode (Inductor compiles these)."""
    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
        for n in (3, 6, 9):
            x = torch.randn(n, 4, device=device)
            results = []
            for f, t in ((compiled, x.to(dtype)), (fn, x.to(dtype)), (fn, x.double())):
                leaf = t.clone().requires_grad_()
                out = f(leaf)
                results.append([out.detach().double(), torch.autograd.grad(out.sum(), leaf)[0].double()])
            (actual, eager, reference), tol = results, (1e-5 if dtype == torch.float32 else 1e-2)
            for a, e, r in zip(actual, eager, reference):  # as close to float64 as eager's, within tol
                assert a.shape == e.shape
                assert (a - r).abs().max() <= 2 * (e - r).abs().max() + tol * r.abs().max()


def test_scalars_a_kernel_of_data_dependent_size_stores_are_computed_before_it(device: str) -> None:
    """`t.exp()` is computed inline by the kernel of `y * 2 + s`, whose size only the data
    decides; the output `s` is then stored by a 0-dim kernel of its own, which ran after
    the kernel that reads it (the wrapper raised KeyError)."""
    def fn(x: torch.Tensor, t: torch.Tensor):
        a = x[x > 0] * 2
        s = t.exp()
        return a + s, s

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
        for n in (5, 8):
            x, t = torch.randn(n, device=device), torch.randn((), device=device)
            torch.testing.assert_close(compiled(x, t), fn(x, t), rtol=1e-6, atol=1e-6)
        assert xpu_lite.counters.kernel_launches > 0


def _norm_over_a_data_dependent_dim(x: torch.Tensor, w: torch.Tensor, region: bool) -> torch.Tensor:
    rows = torch.ones(x.shape[0], dtype=torch.bool, device=x.device).nonzero().squeeze(1)
    x = x.index_select(0, rows)  # a leading size u0, which layer_norm's shape asserts to be 1
    with xpu_lite.compile_region() if region else contextlib.nullcontext():
        return torch.nn.functional.layer_norm(x, w.shape, w, None, 0.5)


@pytest.mark.parametrize("mode", ["default", "region"])
def test_normalizing_over_a_data_dependent_dim_asserted_to_be_1(device: str, mode: str) -> None:
    """The reduction's space has u0 where the rows after it, traced after the assert, have 1:
    equal under the assert, so fused, but the kernel took the rows for other shapes and
    indexed them per row (the region gave values of 1e24; the default mode's kernel failed
    to compile and ran eagerly)."""
    def fn(x, w):
        return _norm_over_a_data_dependent_dim(x, w, region=mode == "region")

    with torch._dynamo.config.patch(capture_dynamic_output_shape_ops=True):
        compiled = torch.compile(fn, backend="xpu_lite", mode="lite" if mode == "region" else None, dynamic=True)
        for k in (2, 3, 5):
            x, w = torch.randn(1, k, 3, device=device), torch.randn(1, k, 3, device=device)
            results = []
            for f in (compiled, fn):
                leaves = [t.clone().requires_grad_() for t in (x, w)]
                out = f(*leaves)
                results.append([out, *torch.autograd.grad((out * out.detach()).sum(), leaves)])
            torch.testing.assert_close(results[0], results[1], rtol=1e-5, atol=1e-5)
    assert xpu_lite.counters.kernel_launches > 0
