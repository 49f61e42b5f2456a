"""A user's own Triton kernels (@triton.jit) launched inside a compiled function.

Dynamo traces a launch as `triton_kernel_wrapper_functional`: eager's implementation of it
copies every tensor the kernel writes, launches the kernel on the copies and returns them.
xpu_lite launches it as written, copying only where the old value is read later
(codegen/reinplace.py, as for custom ops that write their inputs).

On cuda and xpu the kernel is compiled by Triton. On cpu Triton has no device, and Dynamo
then treats a kernel as Python to trace; so on cpu these tests make a device look present
(Dynamo's `has_triton`, and a driver whose target the mutation analysis compiles the
kernel to TTIR for) and launch the kernel in Triton's interpreter. What is tested, the
graph Dynamo makes of a launch and how xpu_lite calls it, is the same.
"""
from __future__ import annotations

import pytest
import torch

import xpu_lite
from xpu_lite.report import capture

from .conftest import assert_bitwise
from .test_workflows import MODES, _check, _compile

triton = pytest.importorskip("triton")
# Triton 3.9's JIT, launching the user's kernel (xpu_lite's own kernels set enable_fp_fusion)
pytestmark = pytest.mark.filterwarnings("ignore:TRITON_DEFAULT_FP_FUSION is unset")
tl = pytest.importorskip("triton.language")


def _add(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):  # noqa: N803 (Triton's constexpr naming)
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) + tl.load(y_ptr + offsets, mask=mask), mask=mask)


class _CpuTarget:
    """A driver for the mutation analysis only: it compiles the kernel to TTIR for a target."""

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 80, 32)


@pytest.fixture
def add_kernel(device: str, monkeypatch: pytest.MonkeyPatch):
    from triton.runtime.jit import JITFunction

    kernel = JITFunction(_add)
    if device == "cpu":
        from triton.runtime.interpreter import InterpretedFunction

        monkeypatch.setattr(torch.utils._triton, "has_triton", lambda: True)
        monkeypatch.setattr(triton.runtime.driver, "_active", _CpuTarget())  # set_active, undone on teardown
        monkeypatch.setattr(kernel, "run", InterpretedFunction(_add).run)
    return kernel


def _launch(kernel, x: torch.Tensor, y: torch.Tensor, out: torch.Tensor) -> None:
    n = out.numel()
    kernel[(triton.cdiv(n, 16),)](x, y, out, n, BLOCK=16)


@pytest.mark.parametrize("mode", MODES)
def test_user_triton_kernel_between_aten_ops(device: str, mode: str, add_kernel) -> None:
    """One graph for every size (the grid a size expression); the kernel writes a fresh
    tensor, so nothing is copied; the report names the kernel."""
    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        a = x.sin()
        out = torch.empty_like(a)
        _launch(add_kernel, a, y, out)
        return out.cos() * 2

    with capture() as reports:
        compiled = _compile(f, mode, dynamic=True, fullgraph=True)
        for n in (5, 33, 40):
            x, y = torch.randn(n, device=device), torch.randn(n, device=device)
            _check(mode, compiled(x, y), f(x, y))
    assert xpu_lite.counters.forward_graphs == 1
    source = reports[0].source
    assert "= _triton_kernel_in_place(" in source and "tensors_to_clone=[]" in source, source
    reasons = {row[4] for row in reports[0].rows() if row[2] == "triton_kernel_wrapper_functional"}
    reason = ("outside region: lite mode: not in a compile region" if mode == "lite" else
              "user kernel: _add (@triton.jit), launched as written")
    assert reasons == {f"{reason}; the op writes its inputs in place, as in eager (nothing reads their old values later)"}


def test_strict_accepts_a_user_triton_kernel(device: str, add_kernel) -> None:
    """strict=True refuses what stays eager for want of a lowering, not a Triton kernel."""
    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        _launch(add_kernel, x.sin(), y, out)
        return out * 2

    x, y = torch.randn(9, device=device), torch.randn(9, device=device)
    compiled = torch.compile(f, backend="xpu_lite", options={"strict": True}, dynamic=True, fullgraph=True)
    torch.testing.assert_close(compiled(x, y), f(x, y))


@pytest.mark.parametrize("mode", MODES)
def test_user_triton_kernel_writing_a_graph_input(device: str, mode: str, add_kernel) -> None:
    """`x += y` by the kernel, on the input itself: written once, in place, as eager's
    program does, and the next op reads the new value."""
    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        _launch(add_kernel, x, y, x)
        return x * 2

    compiled = _compile(f, mode, dynamic=True, fullgraph=True)
    for n in (5, 33):
        x, y = torch.randn(n, device=device), torch.randn(n, device=device)
        got, want = x.clone(), x.clone()
        actual = compiled(got, y)
        expected = f(want, y)
        assert_bitwise(got, want)
        _check(mode, actual, expected)


@pytest.mark.parametrize("mode", MODES)
def test_user_triton_kernels_in_an_autograd_function(device: str, mode: str, add_kernel) -> None:
    """Training through a kernel pair (forward and backward, each `x + x`) that an
    autograd.Function launches, between aten ops: the gradients are eager's."""
    class Double(torch.autograd.Function):
        @staticmethod
        def forward(ctx, x: torch.Tensor) -> torch.Tensor:
            out = torch.empty_like(x)
            _launch(add_kernel, x, x, out)
            return out

        @staticmethod
        def backward(ctx, grad: torch.Tensor) -> torch.Tensor:
            grad = grad.contiguous()
            out = torch.empty_like(grad)
            _launch(add_kernel, grad, grad, out)
            return out

    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return Double.apply(x.sin() * w).cos().sum()

    compiled = _compile(f, mode, dynamic=True, fullgraph=True)
    for n in (5, 33):
        x, w = (torch.randn(n, device=device, requires_grad=True) for _ in range(2))
        actual = compiled(x, w)
        grads = torch.autograd.grad(actual, (x, w))
        expected = f(x, w)
        _check(mode, (actual, *grads), (expected, *torch.autograd.grad(expected, (x, w))))


@pytest.mark.parametrize("mode", MODES)
def test_triton_op_custom_op(device: str, mode: str, add_kernel) -> None:
    """A custom op whose implementation launches the kernel (`torch.library.triton_op` with
    `wrap_triton`): traced into that launch, as for Inductor, and launched as written."""
    @torch.library.triton_op(f"xpu_lite_test::triton_add_{device}_{mode}", mutates_args={})
    def triton_add(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        out = torch.empty_like(x)
        n = out.numel()
        torch.library.wrap_triton(add_kernel)[(triton.cdiv(n, 16),)](x, y, out, n, BLOCK=16)
        return out

    def f(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return triton_add(x.sin(), y).cos()

    with capture() as reports:
        compiled = _compile(f, mode, dynamic=True, fullgraph=True)
        for n in (5, 33):
            x, y = torch.randn(n, device=device), torch.randn(n, device=device)
            _check(mode, compiled(x, y), f(x, y))
    assert "= _triton_kernel_in_place(" in reports[0].source and "tensors_to_clone=[]" in reports[0].source


def test_user_triton_kernel_copies_only_where_the_old_value_is_read() -> None:
    """codegen/reinplace.py on graphs that launch the kernel through the higher-order op
    themselves: an argument whose old value is read later, or a graph input that no
    `copy_` writes back, is copied; the others are written in place."""
    from torch._higher_order_ops.triton_kernel_wrap import kernel_side_table
    from torch.fx.experimental.proxy_tensor import make_fx
    from triton.runtime.jit import JITFunction

    from xpu_lite.codegen.reinplace import plan_reinplace

    kernel_idx, constants_idx = kernel_side_table.add_kernel(JITFunction(_add)), kernel_side_table.add_constant_args({"BLOCK": 16})

    def add(x: torch.Tensor, out: torch.Tensor) -> dict[str, torch.Tensor]:
        return torch.ops.higher_order.triton_kernel_wrapper_functional(
            kernel_idx=kernel_idx, constant_args_idx=constants_idx, grid=[(1, 1, 1)], tma_descriptor_metadata={},
            kwargs={"x_ptr": x, "y_ptr": x, "out_ptr": out, "n": 4}, tensors_to_clone=["out_ptr"])

    def old_read_later(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        return add(x, y)["out_ptr"] + y

    def only_new_read(x: torch.Tensor) -> torch.Tensor:
        return add(x, x.sin())["out_ptr"] + 1

    def input_not_written_back(x: torch.Tensor) -> torch.Tensor:
        return add(x, x)["out_ptr"] + 1

    def input_written_back(x: torch.Tensor) -> torch.Tensor:
        new = add(x, x)["out_ptr"]
        result = new + 1
        x.copy_(new)
        return result

    plans = {f.__name__: plan_reinplace(make_fx(f, tracing_mode="fake")(torch.randn(4)))
             for f in (old_read_later, only_new_read, input_not_written_back, input_written_back)}
    in_place = {"triton_kernel_wrapper_functional_proxy": ()}
    assert plans == {"old_read_later": {}, "only_new_read": in_place, "input_not_written_back": {},
                     "input_written_back": in_place}, plans
