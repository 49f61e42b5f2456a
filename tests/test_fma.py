"""The ops eager computes with a fused multiply-add (xpu_lite/lowering/fma.py): add/sub with
alpha, lerp, addcmul, addcdiv, tanh_backward (and sigmoid_backward, in its order), each in
its kernel's order on the device, bitwise eager's.
A plain `a + alpha * b` rounds twice and differed in a fifth to a quarter of float32 values."""
from __future__ import annotations

import pytest
import torch

import xpu_lite
from xpu_lite.report import capture

from .conftest import assert_bitwise

CASES = {
    "add alpha": lambda x, y, z, w: torch.add(x, y, alpha=0.3),
    "sub alpha": lambda x, y, z, w: torch.sub(x, y, alpha=0.3),
    "add a number": lambda x, y, z, w: x + 0.1234567,  # cpu float16/bfloat16: rounded to the dtype first
    "sub a number, alpha": lambda x, y, z, w: torch.sub(x, 0.1234567, alpha=3.3),
    "add a 0-dim cpu tensor": lambda x, y, z, w: x + torch.tensor(0.1234567),
    "addcmul": lambda x, y, z, w: torch.addcmul(x, y, z, value=0.3),
    "addcmul value 1": lambda x, y, z, w: torch.addcmul(x, y, z),
    "addcdiv": lambda x, y, z, w: torch.addcdiv(x, y, z, value=0.3),
    "addcdiv value 1": lambda x, y, z, w: torch.addcdiv(x, y, z),
    "lerp": lambda x, y, z, w: torch.lerp(x, y, 0.3),
    "lerp past half": lambda x, y, z, w: torch.lerp(x, y, 0.7),
    "lerp at float32's half": lambda x, y, z, w: torch.lerp(x, y, 0.49999999),  # 0.5 in float32: the second branch
    "lerp by a tensor": lambda x, y, z, w: torch.lerp(x, y, w),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
def test_fused_multiply_adds_are_eagers(device: str, dtype: torch.dtype) -> None:
    """Each op in one kernel, bitwise eager's on the device. Eager's cpu kernels fuse in
    their vectorized body only: the scalar loop over the last n % (2 * vector width)
    elements (32 float32 on AVX512) of each chunk rounds twice, as before. The sizes here
    are multiples of 64 within one chunk (32768 elements), so every element is the body's."""
    if device == "cpu" and torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("eager's cpu kernels without AVX2/AVX512 (ATEN_CPU_CAPABILITY=default) never fuse")

    def fn(x, y, z, w):
        return tuple(case(x, y, z, w) for case in CASES.values())

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    torch.manual_seed(0)
    for n in (256, 1024):
        x, y, z = (torch.randn(n, device=device).to(dtype) for _ in range(3))
        w = torch.rand(n, device=device).to(dtype) * 2 - 0.5  # both lerp branches
        result, expected = compiled(x, y, z, w), fn(x, y, z, w)
        for name, actual, want in zip(CASES, result, expected):
            try:
                assert_bitwise(actual, want)
            except AssertionError as error:
                raise AssertionError(f"{name}, {n} elements: {error}") from None
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.forward_graphs == 1


def test_integer_addcmul_and_alpha_wrap(device: str) -> None:
    """Integers need no fma: exact arithmetic, wrapping as eager's does."""
    def fn(x, y, z):
        return torch.addcmul(x, y, z, value=3), torch.add(x, y, alpha=-7), torch.sub(x, y, alpha=2**20)

    torch.manual_seed(0)
    x, y, z = (torch.randint(-2**31, 2**31 - 1, (257,), dtype=torch.int32, device=device) for _ in range(3))
    assert_bitwise(torch.compile(fn, backend="xpu_lite", dynamic=True)(x, y, z), fn(x, y, z))
    assert xpu_lite.counters.fallback_nodes == 0


def _adam_like(p, exp_avg, exp_avg_sq, grad):
    """The element-wise core of Adam's step, in place, as torch.optim writes it; without
    the sqrt of the denominator: eager's cpu sqrt is not correctly rounded (160 of 1024
    values 1 ulp from float64's), the kernel's is."""
    exp_avg.lerp_(grad, 0.1)
    exp_avg_sq.mul_(0.999).addcmul_(grad, grad, value=0.001)
    p.addcdiv_(exp_avg, exp_avg_sq.add(1e-8), value=-0.01)
    p.add_(p, alpha=-0.0001)


def test_an_in_place_optimizer_step_is_one_kernel(device: str) -> None:
    """Dynamo writes `addcmul_`/`addcdiv_` as `prims.fma` (an eager call between kernels
    before 2026-11-27); the calls are put back and lowered whole: one kernel, the
    parameters and moments bitwise eager's."""
    if device == "cpu" and torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("eager's cpu kernels without AVX2/AVX512 (ATEN_CPU_CAPABILITY=default) never fuse")
    torch.manual_seed(0)
    eager = [torch.randn(1024, device=device) for _ in range(4)]  # a multiple of 64: the vectorized body's
    eager[2] = eager[2].abs()
    compiled_args = [t.clone() for t in eager]
    compiled = torch.compile(_adam_like, backend="xpu_lite", dynamic=True)
    for _ in range(3):
        _adam_like(*eager)
        compiled(*compiled_args)
    assert_bitwise(compiled_args, eager)
    assert xpu_lite.counters.kernels_compiled == 1
    rows = xpu_lite.explain(_adam_like, *[t.clone() for t in eager]).rows()
    assert {row[2] for row in rows if row[3] == "fallback"} == {"aten.copy_.default"}, rows  # stored in place by the kernel


def _sgd_like(p: torch.Tensor, buf: torch.Tensor, g: torch.Tensor, dampening: int) -> None:
    buf.mul_(0.9).add_(g, alpha=1 - dampening)  # SGD's momentum buffer: alpha a symbol of an int
    p.sub_(buf, alpha=dampening * 3)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["float32", "bfloat16"])
def test_a_symbolic_alpha_is_a_kernel_argument(device: str, dtype: torch.dtype) -> None:
    """Under dynamic=True a Python int is a symbol, and so is an `alpha` made of it (SGD's
    `alpha=1 - dampening`, its dampening from the param group): before 2026-11-28 the
    add/sub lowering took it for a literal and the compile failed (TypeError: float()
    argument ... not 'Node'): a compiled SGD step with momentum, and one with a GradScaler.
    It is an argument of the kernel (converted as eager's kernel converts alpha: to
    float32, on cpu to a float16/bfloat16 result's dtype): one graph for every value,
    bitwise eager's."""
    # float16/bfloat16: one op (a kernel rounds once where eager's two ops round twice)
    fn = _sgd_like if dtype == torch.float32 else lambda p, buf, g, dampening: p.sub_(g, alpha=1 - dampening)
    torch.manual_seed(0)
    eager = [torch.randn(1024, device=device, dtype=dtype) for _ in range(3)]  # eager's vectorized body's
    compiled_args = [t.clone() for t in eager]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for dampening in (2, 3, 7):
        fn(*eager, dampening)
        compiled(*compiled_args, dampening)
        assert_bitwise(compiled_args, eager)
    assert xpu_lite.counters.graphs_compiled == 1 and xpu_lite.counters.kernels_compiled == 1


_BACKWARDS = {  # op -> its forward, which saves y
    "tanh_backward": (torch.ops.aten.tanh_backward.default, torch.tanh),
    "sigmoid_backward": (torch.ops.aten.sigmoid_backward.default, torch.sigmoid),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16], ids=["float32", "float16", "bfloat16"])
@pytest.mark.parametrize("name", list(_BACKWARDS))
def test_tanh_and_sigmoid_backward_are_eagers(device: str, dtype: torch.dtype, name: str) -> None:
    """The gradients of tanh, `grad * (1 - y * y)` as eager's kernels contract it (719 of
    1024 float32 values differed before 2026-11-27), and of sigmoid, `grad * (1 - y) * y`
    in that order (1317 of 4096 float32 values differed before 2026-11-27, the
    decomposition multiplying `y * (1 - y)` first; float16 on cpu rounds each step): one
    kernel, bitwise eager's. The op is called directly: a compiled tanh or sigmoid itself
    may differ from eager's in the last bit."""
    if device == "cpu" and torch.backends.cpu.get_cpu_capability() == "DEFAULT":
        pytest.skip("eager's cpu kernels without AVX2/AVX512 (ATEN_CPU_CAPABILITY=default) never fuse")
    fn, forward = _BACKWARDS[name]
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    torch.manual_seed(0)
    for n in (256, 1024):
        grad, y = torch.randn(n, device=device).to(dtype), forward(torch.randn(n, device=device) * 3).to(dtype)
        assert_bitwise(compiled(grad, y), fn(grad, y))
    assert xpu_lite.counters.fallback_nodes == 0
    with capture() as graphs:  # the forward's backward graph: the op, a kernel
        torch.compile(forward, backend="xpu_lite", dynamic=True)(torch.randn(64, device=device, requires_grad=True)).sum().backward()
    assert {d.kind.value for g in graphs for d in g.decisions if d.op == f"aten.{name}.default"} == {"kernel"}


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_the_gpu_orders_of_half_gradients_round_each_step(monkeypatch: pytest.MonkeyPatch, dtype: torch.dtype) -> None:
    """What the kernels compute on cuda/xpu, run here by the interpreter: eager's cuda and
    xpu kernels of tanh_backward and sigmoid_backward compute a float16/bfloat16 gradient in
    its dtype (`scalar_t` arithmetic), each step rounded, which is what the same steps as
    separate eager ops give on cpu. The lowering is made to take the node for a GPU's."""
    import xpu_lite.lowering.fma as fma
    import xpu_lite.lowering.operands as operands

    monkeypatch.setattr(fma, "on_cpu", lambda node: False)
    monkeypatch.setattr(operands, "on_cpu", lambda node: False)  # operands.steps
    torch.manual_seed(0)
    grad, x = torch.randn(1024).to(dtype), torch.randn(1024) * 3
    for op, y, steps in (
        (torch.ops.aten.tanh_backward.default, x.tanh().to(dtype), lambda g, y: g * (1 - y * y)),
        (torch.ops.aten.sigmoid_backward.default, x.sigmoid().to(dtype), lambda g, y: g * (1 - y) * y),
    ):
        assert_bitwise(torch.compile(op, backend="xpu_lite", dynamic=True)(grad, y), steps(grad, y))
        if not (op is torch.ops.aten.sigmoid_backward.default and dtype is torch.float16):  # cpu rounds that one's steps too
            assert not torch.equal(op(grad, y), steps(grad, y))  # cpu's eager kernel computes in float: another result
    assert xpu_lite.counters.fallback_nodes == 0


def _fma32(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor) -> torch.Tensor:
    """fma of float32 values: the product is exact in float64 (48 bits), the sum rounded to
    float64, then to float32. That double rounding differs from one rounding only where the
    float64 sum lands exactly halfway between two float32 values (about 2**-29 of cases)."""
    return (a.double() * b.double() + c.double()).float()


_GPU_ORDERS = {  # case -> (fn, eager's cuda/xpu kernel's order in float32)
    "add alpha": (lambda x, y, z: torch.add(x, y, alpha=0.3), lambda x, y, z: _fma32(torch.tensor(0.3), y, x)),
    "sub alpha": (lambda x, y, z: torch.sub(x, y, alpha=0.3), lambda x, y, z: _fma32(torch.tensor(-0.3), y, x)),
    "lerp": (lambda x, y, z: torch.lerp(x, y, 0.3), lambda x, y, z: _fma32(torch.tensor(0.3), y - x, x)),
    "lerp past half": (lambda x, y, z: torch.lerp(x, y, 0.7), lambda x, y, z: _fma32(torch.tensor(0.7) - 1, y - x, y)),
    "addcmul": (lambda x, y, z: torch.addcmul(x, y, z, value=0.3), lambda x, y, z: _fma32(torch.tensor(0.3), y * z, x)),
    "addcmul value 1": (lambda x, y, z: torch.addcmul(x, y, z), lambda x, y, z: _fma32(y, z, x)),
    "addcdiv": (lambda x, y, z: torch.addcdiv(x, y, z, value=0.3), lambda x, y, z: _fma32(torch.tensor(0.3), y / z, x)),
    "addcdiv value 1": (lambda x, y, z: torch.addcdiv(x, y, z), lambda x, y, z: x + y / z),
    "tanh_backward": (lambda x, y, z: torch.ops.aten.tanh_backward(x, z),  # z in (-1, 1): a tanh's values
                      lambda x, y, z: x * _fma32(-z, z, torch.tensor(1.0))),
    "divide by a Python float": (lambda x, y, z: x / 3.0, lambda x, y, z: x * (torch.tensor(1.0) / 3.0)),
    "floor-divide by a Python float": (lambda x, y, z: torch.div(x, -0.3, rounding_mode="trunc"),
                                       lambda x, y, z: torch.trunc(x * (torch.tensor(1.0) / -0.3))),
}


@pytest.mark.parametrize("case", list(_GPU_ORDERS))
def test_the_gpu_orders_of_float32_ops_run_by_the_interpreter(monkeypatch: pytest.MonkeyPatch, case: str) -> None:
    """The kernels' cuda/xpu order of each op (fma.py's table; division by a cpu scalar as a
    multiply by its float32 reciprocal, division.py), run here by the interpreter with the
    lowerings taking the node for a GPU's, against that order computed by torch on cpu:
    these paths otherwise run only on a GPU. (A GPU run compares them with eager's own
    kernels: gpu_session.sh.)"""
    import xpu_lite.lowering.division as division
    import xpu_lite.lowering.fma as fma

    monkeypatch.setattr(fma, "on_cpu", lambda node: False)
    monkeypatch.setattr(division, "on_cpu", lambda node: False)
    fn, order = _GPU_ORDERS[case]
    torch.manual_seed(0)
    x, y, z = torch.randn(1000) * 10, torch.randn(1000) * 10, torch.rand(1000) * 1.8 - 0.9
    got, want = torch.compile(fn, backend="xpu_lite", dynamic=True)(x, y, z), order(x, y, z)
    assert_bitwise(got, want)
    assert xpu_lite.counters.fallback_nodes == 0

