"""PyTorch workflows users bring to torch.compile, through xpu_lite: inference_mode,
activation checkpointing, compiled autograd, a compiled optimizer step, custom ops, vmap,
complex tensors,
control flow (`torch.cond`, `while_loop`, scan, map), `nested_compile_region`,
the ways to ask for dynamic sizes (automatic, mark_dynamic), transformers' `generate`
with a KV cache, and ranks compiling at once. Lite mode against eager
bit for bit; the default mode (Triton kernels) within tests/test_kernels.py's tolerance."""
from __future__ import annotations

import contextlib
import copy
import logging
import os
import re
import subprocess
import sys
import textwrap

import pytest
import torch
from torch.utils.checkpoint import checkpoint

import xpu_lite
from xpu_lite import DecisionKind, FallbackKind
from xpu_lite.report import capture, saved_bytes

from .conftest import assert_bitwise, one_rank
from .test_kernels import ATOL, RTOL

MODES = ("lite", "default")


def _compile(fn, mode: str, **kwargs):
    return torch.compile(fn, backend="xpu_lite", mode=None if mode == "default" else mode, **kwargs)


def _check(mode: str, actual, expected) -> None:
    """Lite: bitwise. Default: close, and some of it ran as Triton kernels. The absolute
    tolerance of each tensor is ATOL times its largest magnitude (at least ATOL): a sum's
    rounding grows with its terms, and eager's own order differs by cpu (a weight's gradient
    of magnitude 46 was 3.8e-5 from eager's on an AVX2 cpu, both 2.4-2.6e-5 from float64)."""
    if mode == "lite":
        assert_bitwise(actual, expected)
        return
    pairs = zip(actual, expected, strict=True) if isinstance(actual, (list, tuple)) else [(actual, expected)]
    for a, e in pairs:
        scaled = isinstance(e, torch.Tensor) and e.numel() and (e.is_floating_point() or e.is_complex())
        torch.testing.assert_close(a, e, rtol=RTOL, atol=ATOL * max(1.0, e.abs().max().item()) if scaled else ATOL)
    assert xpu_lite.counters.kernel_launches > 0


class _Mlp(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Linear(8, 16)
        self.b = torch.nn.Linear(16, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.b(torch.relu(self.a(x))))


@pytest.mark.parametrize("mode", MODES)
def test_inference_mode(device: str, mode: str) -> None:
    """Inputs created under torch.inference_mode (inference tensors) and the call inside it."""
    torch.manual_seed(0)
    model = _Mlp().to(device)
    compiled = _compile(model, mode, dynamic=True)
    for batch in (2, 3, 5):
        with torch.inference_mode():
            x = torch.randn(batch, 8, device=device)
            _check(mode, compiled(x), model(x))
    assert xpu_lite.counters.forward_graphs == 1


def _attention(q: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, q.cos(), q)


def _math_attention(q: torch.Tensor) -> torch.Tensor:
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel([SDPBackend.MATH]):
        return _attention(q)


def test_sdpa_kernel_inside_the_function_is_traced_and_around_it_read_at_run_time(device: str) -> None:
    """Dynamo keeps `sdpa_kernel` inside the function as calls that run while tracing only:
    a kept sdpa ran the default kernel (cpu: flash attention) where eager took the math
    path. Inside, lite mode traces the choice; around the compiled call the kept op reads
    it when it runs, as eager does (aot_eager traces one choice for both)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    inside = torch.compile(_math_attention, backend="xpu_lite", mode="lite", dynamic=True)
    around = torch.compile(_attention, backend="xpu_lite", mode="lite", dynamic=True)
    for n in (16, 24, 40):
        q = torch.randn(1, 2, n, 8, device=device)
        assert_bitwise(inside(q), _math_attention(q))
        assert_bitwise(around(q), _attention(q))
        with sdpa_kernel([SDPBackend.MATH]):
            assert_bitwise(around(q), _attention(q))


def _saved_and_results(fn, x: torch.Tensor, held=()) -> tuple[int, list[torch.Tensor]]:
    """The bytes autograd saves for the backward of fn(x) but `held`'s (xpu_lite.report.saved_bytes:
    AOTAutograd's saved values go through the same hooks as eager's), and [fn(x), x's gradient]."""
    results: list[torch.Tensor] = []

    def step() -> None:
        results.append(fn(x))
        results.extend(torch.autograd.grad(results[0], [x]))

    return saved_bytes(step, held), results


def test_default_mode_recomputes_cheap_values_instead_of_saving_them(device: str) -> None:
    """The default mode partitions forward and backward as Inductor and aot_eager do (a min cut
    over the saved values, since 2026-11-29): a chain of pointwise ops saves its input and
    the backward's kernel recomputes the rest, where eager saves each op's input. Lite mode
    saves what eager saves: its backward runs eager's ops, which would run again."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        return x.sin().sin().sin().sum()

    default = torch.compile(fn, backend="xpu_lite", dynamic=True)
    lite = torch.compile(fn, backend="xpu_lite", mode="lite", dynamic=True)
    for n in (48, 80):
        x = torch.randn(n, device=device, requires_grad=True)
        eager_saved, expected = _saved_and_results(fn, x)
        assert eager_saved == 3 * n * 4, eager_saved  # x, sin(x), sin(sin(x))
        default_saved, actual = _saved_and_results(default, x)
        assert default_saved == n * 4, default_saved  # x alone
        torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
        lite_saved, actual = _saved_and_results(lite, x)
        assert lite_saved == eager_saved
        assert_bitwise(actual, expected)
    assert xpu_lite.counters.forward_graphs == 2


def test_explain_names_what_the_backward_recomputes(device: str) -> None:
    """explain() says which of the backward's nodes the forward computed too and did not
    save: the two inner sins of `x.sin().sin().sin()` in the default mode (the outer one's
    value is not needed: its gradient is cos of its input); in lite mode nothing."""
    x = torch.randn(16, device=device, requires_grad=True)
    recomputed = {}
    for mode in MODES:
        report = xpu_lite.explain(lambda x: x.sin().sin().sin().sum().backward(), x, mode=mode, dynamic=True)
        recomputed[mode] = {(g.kind, d.node, d.op) for g in report.graphs for d in g.decisions if "recomputed" in d.why()}
    assert recomputed["default"] == {("backward", "sin", "aten.sin.default"), ("backward", "sin_1", "aten.sin.default")}
    assert recomputed["lite"] == set()


def test_activation_memory_budget_bounds_the_default_modes_partition(device: str) -> None:
    """torch._functorch.config.activation_memory_budget, Inductor's knob, bounds the default
    mode's min cut too: at 0 the forward saves the input alone, besides the parameters (the
    backward recomputes even the matmul), gradients as close either way."""
    torch.manual_seed(0)
    model = _Mlp().to(device)
    x = torch.randn(16, 8, device=device, requires_grad=True)
    _, expected = _saved_and_results(lambda t: model(t).sum(), x)
    saved = {}
    for budget in (1.0, 0.0):
        torch._dynamo.reset()
        with torch._functorch.config.patch(activation_memory_budget=budget):
            compiled = torch.compile(lambda t: model(t).sum(), backend="xpu_lite", dynamic=True)
            saved[budget], actual = _saved_and_results(compiled, x, held=list(model.parameters()))
        torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    assert saved[0.0] == x.numel() * 4 < saved[1.0], saved


@pytest.mark.parametrize("spelling", ("region", "compile_ops"))
def test_lite_modes_regions_recompute_their_values_and_save_eagers(device: str, spelling: str) -> None:
    """Lite mode with a region (or compile_ops) cuts as the default mode does over the
    selected nodes alone: the backward's kernel recomputes the region's sin chain from `a`,
    which the eager `mul` saves anyway, where eager saves each sin's input; the eager ops'
    values are saved as eager saves them and never computed again. Without a region lite
    mode saves eager's bytes (test above)."""
    def fn(x: torch.Tensor) -> torch.Tensor:
        a = x.cos()
        with xpu_lite.compile_region() if spelling == "region" else contextlib.nullcontext():
            y = a.sin().sin().sin()
        return (y.exp() * a).sum()

    options = {"mode": "lite", **({"compile_ops": ["aten.sin"]} if spelling == "compile_ops" else {})}
    compiled = torch.compile(fn, backend="xpu_lite", options=options, dynamic=True)
    for n in (48, 80):
        x = torch.randn(n, device=device, requires_grad=True)
        eager_saved, expected = _saved_and_results(fn, x)
        assert eager_saved == 5 * n * 4, eager_saved  # x, a, sin(a), sin(sin(a)), exp(y)
        launches = xpu_lite.counters.kernel_launches
        saved, actual = _saved_and_results(compiled, x)
        assert saved == 3 * n * 4, saved  # x, a, exp(y)
        assert xpu_lite.counters.kernel_launches >= launches + 2  # the region, in the forward and the backward
        torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)


def test_the_default_modes_partition_trains_where_the_environment_sets_ci(device: str) -> None:
    """With the environment variable CI set (GitHub Actions sets it, as does this project's
    CI), Inductor's lowerings raise at import when torch._decomp's table has an entry for an
    op they run eagerly, and the min cut imports them. A fresh process, so that the import
    is the first: a default-mode training step, gradients against eager's. (Before the
    partition was chosen outside the trace, whose fake rules are such entries, it raised.)"""
    script = textwrap.dedent(
        f"""
        import sys, torch
        import xpu_lite
        assert "torch._inductor.lowering" not in sys.modules
        fn = lambda x: x.sin().sin().sum()
        x = torch.randn(8, device="{device}", requires_grad=True)
        (grad,) = torch.autograd.grad(torch.compile(fn, backend="xpu_lite")(x), [x])
        torch.testing.assert_close(grad, torch.autograd.grad(fn(x), [x])[0], rtol={RTOL}, atol={ATOL})
        assert xpu_lite.counters.kernel_launches > 0
        print("ok")
        """
    )
    env = {**os.environ, "CI": "1"}
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=env)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().endswith("ok")


@pytest.mark.parametrize("mode", MODES)
def test_activation_checkpointing(device: str, mode: str) -> None:
    """torch.utils.checkpoint inside the compiled function: outputs and gradients."""
    torch.manual_seed(0)
    model = _Mlp().to(device)

    def loss(x: torch.Tensor) -> torch.Tensor:
        return checkpoint(model, x, use_reentrant=False).square().sum()

    compiled = _compile(loss, mode, dynamic=True)
    params = list(model.parameters())
    for batch in (2, 3, 5):
        x = torch.randn(batch, 8, device=device, requires_grad=True)
        expected = loss(x)
        expected_grads = torch.autograd.grad(expected, [x, *params])
        actual = compiled(x)
        _check(mode, [actual, *torch.autograd.grad(actual, [x, *params])], [expected, *expected_grads])
    assert xpu_lite.counters.forward_graphs == 1


def test_activation_checkpointing_around_a_lite_region(device: str) -> None:
    """A checkpointed block holding a compile region, beside the block unchecked (on other
    values: CSE would merge them), in lite mode: the cut over the region's nodes keeps the
    user's checkpoint tags, so the step recomputes the checkpoint's eager ops as the user
    asked and the region's values; with those tags overwritten by its MUST_SAVE it saved
    eager's bytes."""
    torch.manual_seed(0)
    model = _Mlp().to(device)

    def block(x: torch.Tensor) -> torch.Tensor:
        h = model.a(x)
        with xpu_lite.compile_region():
            h = h.sin().sin()
        return model.b(h).relu()

    def loss(x: torch.Tensor) -> torch.Tensor:
        return checkpoint(block, x, use_reentrant=False).square().sum() + block(x.cos()).sum()

    compiled = _compile(loss, "lite", dynamic=True)
    for batch in (2, 3, 5):
        x = torch.randn(batch, 8, device=device, requires_grad=True)
        eager_saved, expected = _saved_and_results(loss, x, held=list(model.parameters()))
        launches = xpu_lite.counters.kernel_launches
        saved, actual = _saved_and_results(compiled, x, held=list(model.parameters()))
        assert xpu_lite.counters.kernel_launches > launches
        # eager saves x, relu's output (the checkpoint's), cos(x), h, sin(h), sin(sin(h)) and relu's
        # output; the compiled step neither the checkpoint's relu output (8 per row) nor sin(h) (16)
        assert saved == eager_saved - (8 + 16) * batch * 4, (saved, eager_saved)
        torch.testing.assert_close(actual, expected, rtol=RTOL, atol=ATOL)
    assert xpu_lite.counters.forward_graphs == 1


@pytest.mark.parametrize("mode", MODES)
def test_compiled_autograd(device: str, mode: str) -> None:
    """torch._dynamo.config.compiled_autograd: the backward that a compiled training step
    runs is captured as one graph, compiled by the same backend, whose first input is a list
    of tensors (it failed before 2026-11-28: "all flat_args must be KNOWN_TYPES")."""
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 16), torch.nn.LayerNorm(16), torch.nn.GELU(), torch.nn.Linear(16, 1)).to(device)
    twin = copy.deepcopy(model)

    def step(net: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
        loss = net(x).square().mean()
        loss.backward()
        return loss

    with torch._dynamo.config.patch(compiled_autograd=True), capture() as reports:
        compiled = _compile(step, mode, dynamic=True)
        for batch in (4, 6, 9):
            x = torch.randn(batch, 8, device=device)
            _check(mode, [compiled(twin, x), *(p.grad for p in twin.parameters())],
                   [step(model, x), *(p.grad for p in model.parameters())])
    assert torch._dynamo.utils.counters["compiled_autograd"]["captures"] > 0
    backward_graphs = [r for r in reports if r.kind == "compiled_autograd"]
    assert backward_graphs and all(r.decisions and r.name.endswith("_compiled_autograd") for r in backward_graphs)
    assert xpu_lite.counters.forward_graphs == 1  # the step's forward; compiled autograd's graphs are backward ones


def test_compiled_autograd_compiles_a_regions_backward(device: str) -> None:
    """Lite mode: compiled autograd's graph holds the backward of a compile region's ops with
    the region's annotation; they are traced with it (the graph module's nodes interpreted,
    as AOTAutograd interprets a graph module), so they become kernels and the rest stays
    eager's calls. Before: all eager, 'not in a compile region'."""
    torch.manual_seed(0)
    weight = torch.randn(8, device=device, requires_grad=True)

    def step(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        with xpu_lite.compile_region():
            y = (x * w).sin() * 2
        loss = y.cos().sum()
        loss.backward()
        return loss

    twin = weight.detach().clone().requires_grad_()
    x = torch.randn(4, 8, device=device)
    with torch._dynamo.config.patch(compiled_autograd=True), capture() as reports:
        loss = _compile(step, "lite")(x, twin)
    expected = step(x, weight)
    torch.testing.assert_close([loss, twin.grad], [expected, weight.grad], rtol=RTOL, atol=ATOL)
    [backward] = [r for r in reports if r.kind == "compiled_autograd"]
    kinds = {d.kind for d in backward.decisions if d.op in ("aten.cos.default", "aten.sum.dim_IntList")}
    assert kinds == {DecisionKind.KERNEL}, backward.decisions
    outside = [d for d in backward.decisions if d.reason and d.reason.kind == FallbackKind.OUTSIDE_REGION]
    assert any(d.op == "aten.sin.default" for d in outside), backward.decisions  # cos's derivative: outside


def _optimizer_run(device: str, make_optimizer, step_backend: dict | None, steps: int = 3) -> list[torch.Tensor]:
    """Parameters after `steps` optimizer steps with fixed gradients; the step compiled with
    `step_backend` (torch.compile kwargs) or eager (None)."""
    torch._dynamo.reset()
    torch.manual_seed(0)
    params = [torch.nn.Parameter(torch.randn(shape, device=device)) for shape in ((8, 4), (4,), (4, 4))]
    optimizer = make_optimizer(params)
    step = optimizer.step if step_backend is None else torch.compile(optimizer.step, **step_backend)
    grads = torch.Generator().manual_seed(1)
    for _ in range(steps):
        for p in params:
            p.grad = torch.randn(p.shape, generator=grads).to(device)
        step()
    return [p.detach() for p in params]


@pytest.mark.parametrize("mode", MODES)
def test_backward_inside_a_compiled_function_leaves_xpu_lite_to_python(device: str, mode: str) -> None:
    """`loss.backward()` inside the compiled function: a graph break, and AOTAutograd compiles
    the backward graph at that call, with Dynamo's frame callback active. xpu_lite's own code
    and the generated backward wrapper (the Triton interpreter under it too) run untraced:
    before 2026-11-27 Dynamo traced and compiled xpu_lite's functions (partition's `decide`,
    the wrapper's builder, ...), some 600 frames; and
    in lite mode it traced the backward wrapper, kernel-free, so not wrapped in
    torch._dynamo.disable as wrappers with kernels were."""
    def run(x: torch.Tensor) -> torch.Tensor:
        loss = ((x.sin() * 2).relu() * 3).sum()
        loss.backward()
        return loss

    messages: list[str] = []
    handler = logging.Handler()
    handler.emit = lambda record: messages.append(record.getMessage())
    dynamo_log = logging.getLogger("torch._dynamo")
    torch._logging.set_logs(dynamo=logging.INFO)
    dynamo_log.addHandler(handler)
    try:
        x, y = (torch.randn(6, 4, device=device, requires_grad=True) for _ in range(2))
        with torch.no_grad():
            y.copy_(x)
        _check(mode, (_compile(run, mode)(x), x.grad), (run(y), y.grad))
    finally:
        dynamo_log.removeHandler(handler)
        torch._logging.set_logs()
    traced = [m for m in messages if "start tracing" in m]
    assert traced and all("test_workflows.py" in m for m in traced), traced  # run and its resume only


@pytest.mark.parametrize("foreach", [False, True], ids=["for-loop", "foreach"])
def test_compiled_sgd_step_is_eager(device: str, foreach: bool) -> None:
    """Parameters and momentum buffers are graph inputs updated in place, every step. The
    reference is Dynamo's captured program run by torch's `eager` backend: on cuda, the
    compiled for-loop step rounds a matrix's update differently from eager SGD (aot_eager's
    too), so against eager SGD it is bitwise on cpu and within float32 rounding elsewhere."""
    def sgd(params):
        return torch.optim.SGD(params, lr=0.1, momentum=0.9, weight_decay=1e-2, foreach=foreach)

    xpu_lite.reset_counters()
    actual = _optimizer_run(device, sgd, {"backend": "xpu_lite", "mode": "lite"})
    assert xpu_lite.counters.forward_graphs >= 1
    assert_bitwise(actual, _optimizer_run(device, sgd, {"backend": "eager"}))
    eager = _optimizer_run(device, sgd, None)
    if device == "cpu":
        assert_bitwise(actual, eager)
    torch.testing.assert_close(actual, eager, rtol=1e-6, atol=1e-6)


def test_compiled_adam_step_runs_the_captured_program(device: str) -> None:
    """torch.optim's Adam takes other branches when compiled (its step count stays a
    tensor), so the reference is Dynamo's captured program run by torch's own `eager`
    backend: lite mode is bitwise equal to it, and within float32 rounding of eager Adam."""
    def adam(params):
        return torch.optim.Adam(params, lr=1e-2, weight_decay=1e-2, foreach=True)

    actual = _optimizer_run(device, adam, {"backend": "xpu_lite", "mode": "lite"})
    assert_bitwise(actual, _optimizer_run(device, adam, {"backend": "eager"}))
    torch.testing.assert_close(actual, _optimizer_run(device, adam, None), rtol=1e-6, atol=1e-6)


@torch.library.custom_op("xpu_lite_test::scaled_sin", mutates_args=())
def _scaled_sin(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.sin(x) * scale


@_scaled_sin.register_fake
def _(x: torch.Tensor, scale: float) -> torch.Tensor:
    return torch.empty_like(x)


@pytest.mark.parametrize("mode", MODES)
def test_custom_op_is_called_as_itself(device: str, mode: str) -> None:
    def f(x: torch.Tensor) -> torch.Tensor:
        return _scaled_sin(x + 1, 2.0) * x

    with xpu_lite.report.capture() as reports:
        compiled = _compile(f, mode, dynamic=True)
        for n in (3, 4, 6):
            x = torch.randn(n, device=device)
            _check(mode, compiled(x), f(x))
    assert "torch.ops.xpu_lite_test.scaled_sin.default(" in reports[0].source


@torch.library.custom_op("xpu_lite_test::scale_", mutates_args=("x",))
def _scale_(x: torch.Tensor, factor: float) -> None:
    x.mul_(factor)


@_scale_.register_fake
def _(x: torch.Tensor, factor: float) -> None:
    return None


@pytest.mark.parametrize("mode", MODES)
def test_custom_op_that_writes_its_input(device: str, mode: str) -> None:
    """A custom op that mutates an argument: on an intermediate, on a graph input (a cache),
    and on a slice of another. Each is traced as `auto_functionalized_v2`, which eager's
    implementation runs on copies. Nothing reads the old values later, so all are written in
    place, as eager's program does: no copy of the caches, whose copy back into the input
    is then a no-op. Where the op writes whole tensors, the wrapper calls the op itself; for
    the slice, the higher-order op with no base to copy. The inputs are written once."""
    def f(x: torch.Tensor, cache: torch.Tensor, other: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        _scale_(y, 3.0)
        _scale_(cache, 2.0)
        _scale_(other[1:3], 0.5)
        return y.cos() + cache + other.sum(0)

    x, cache, other = torch.randn(5, 4, device=device), torch.randn(4, device=device), torch.randn(4, 4, device=device)
    got, want = (cache.clone(), other.clone()), (cache.clone(), other.clone())
    with capture() as reports:
        actual = _compile(f, mode, dynamic=True)(x, *got)
    _check(mode, (actual, *got), (f(x, *want), *want))
    lines = reports[0].source.splitlines()
    assert sum("torch.ops.xpu_lite_test.scale_.default(x=" in line for line in lines) == 2, reports[0].source
    assert [line.split("(", 1)[0].split("= ")[1] for line in lines if "auto_functionalized_v2(" in line and
            "_only_clone_these_bases=()" in line] == ["torch.ops.higher_order.auto_functionalized_v2"], reports[0].source
    reasons = {row[4] for row in reports[0].rows() if row[2] == "auto_functionalized_v2"}
    reason = ("outside region: lite mode: not in a compile region" if mode == "lite" else
              "no lowering: a higher-order op (auto_functionalized_v2) left to eager")
    assert reasons == {f"{reason}; the op writes its inputs in place, as in eager (nothing reads their old values later)"}


def test_custom_op_writes_in_place_only_where_nothing_reads_the_old_value() -> None:
    """codegen/reinplace.py on graphs that call auto_functionalized_v2 themselves: a base
    whose old value is read later, and a graph input that no `copy_` writes back (the
    program does not mutate it) or that is read before its `copy_`, are copied."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from xpu_lite.codegen.reinplace import plan_reinplace

    def scaled(base: torch.Tensor) -> tuple[torch.Tensor, ...]:
        return torch.ops.higher_order.auto_functionalized_v2(torch.ops.xpu_lite_test.scale_.default, factor=3.0,
                                                             _x_base_index=0, _all_bases=[base])

    def old_read_later(x: torch.Tensor) -> torch.Tensor:
        y = x.sin()
        return scaled(y)[1] + y

    def only_new_read(x: torch.Tensor) -> torch.Tensor:
        return scaled(x.sin())[1] + 1

    def input_not_written_back(x: torch.Tensor) -> torch.Tensor:
        return scaled(x)[1] + 1

    def input_written_back(x: torch.Tensor) -> torch.Tensor:
        new = scaled(x)[1]
        result = new + 1
        x.copy_(new)
        return result

    def input_read_before_written_back(x: torch.Tensor) -> torch.Tensor:
        new = scaled(x)[1]
        result = new + x
        x.copy_(new)
        return result

    plans = {f.__name__: plan_reinplace(make_fx(f, tracing_mode="fake")(torch.randn(4)))
             for f in (old_read_later, only_new_read, input_not_written_back, input_written_back, input_read_before_written_back)}
    in_place = {"auto_functionalized_v2": ()}
    assert plans == {"old_read_later": {}, "only_new_read": in_place, "input_not_written_back": {},
                     "input_written_back": in_place, "input_read_before_written_back": {}}, plans


@pytest.mark.parametrize("mode", MODES)
def test_vmap_inside_the_function(device: str, mode: str) -> None:
    weight = torch.randn(8, 4, device=device)

    def f(x: torch.Tensor) -> torch.Tensor:
        return torch.vmap(lambda row: torch.relu(row @ weight) + row.sum())(x)

    compiled = _compile(f, mode, dynamic=True)
    for n in (3, 4, 6):
        x = torch.randn(n, 8, device=device)
        _check(mode, compiled(x), f(x))
    assert xpu_lite.counters.forward_graphs == 1


@pytest.mark.parametrize("mode", MODES)
def test_torch_func_transforms_inside_the_function(device: str, mode: str) -> None:
    """Per-sample gradients (`vmap(grad(loss))` over `functional_call`), `jacrev` and `vjp`
    of kept composite ops (linear, layer_norm, rms_norm, cosine_similarity). Until
    2026-11-28 lite mode failed to compile them: a kept op's autograd.Function had no
    setup_context, which torch.func's transforms require. Under them the body now runs op
    by op, as in eager (decomp/plan.py)."""
    from torch.func import functional_call, grad, jacrev, vjp, vmap

    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.LayerNorm(8), torch.nn.GELU(),
                                torch.nn.Linear(8, 3)).to(device)
    params = {k: v.detach() for k, v in model.named_parameters()}
    w = torch.randn(8, device=device)

    def loss(p, x, t):
        return torch.nn.functional.cross_entropy(functional_call(model, p, (x[None],)), t[None])

    def f(x, t):
        per_sample = vmap(grad(loss), in_dims=(None, 0, 0))(params, x, t)
        jacobian = jacrev(lambda r: torch.nn.functional.rms_norm(r, (8,), w) + r.sin())(x[0])
        out, pullback = vjp(lambda r: torch.nn.functional.cosine_similarity(r, w.expand_as(r)) * 2, x)
        return per_sample, jacobian, pullback(torch.ones_like(out))[0]

    compiled = _compile(f, mode, dynamic=True)
    for n in (3, 5):
        x, t = torch.randn(n, 8, device=device), torch.randint(0, 3, (n,), device=device)
        got, want = torch.utils._pytree.tree_leaves(compiled(x, t)), torch.utils._pytree.tree_leaves(f(x, t))
        if mode == "lite":
            assert_bitwise(got, want)
        else:
            torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)

@pytest.mark.parametrize("mode", MODES)
def test_complex_tensors(device: str, mode: str) -> None:
    """Complex inputs and outputs, fft, view_as_real: complex dtypes are no kernel dtype, so
    the default mode runs fft and abs eagerly (with a reason), and computes the product
    with a conjugate on float pairs (decomp/complex_mul.py, tests/test_complex.py); it still
    matches."""
    def f(z: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        spectrum = torch.fft.fft(z * z.conj())
        return spectrum, torch.view_as_real(spectrum).sum(-1) + z.abs()

    compiled = _compile(f, mode, dynamic=True)
    for n in (4, 6, 9):
        z = torch.randn(n, dtype=torch.complex64, device=device)
        _check(mode, compiled(z), f(z))
    assert xpu_lite.counters.forward_graphs == 1


@pytest.mark.parametrize("mode", MODES)
def test_control_flow_operators(device: str, mode: str) -> None:
    """torch.cond (both branches taken, with gradients) and while_loop: eager's higher-order
    op picks and calls the subgraphs, each compiled as a graph of its own (kernels in the
    default mode, with strict=True too), one compilation for every size."""
    def f(x: torch.Tensor) -> torch.Tensor:
        y = torch.cond(x.sum() > 0, lambda t: (t.sin() * 2).relu(), lambda t: t.cos() + 1, (x,))
        return y * 3

    def loop(x: torch.Tensor) -> torch.Tensor:
        _, doubled = torch._higher_order_ops.while_loop(lambda i, t: i < 3, lambda i, t: (i + 1, t.sin() * 2),
                                                         (torch.tensor(0, device=x.device), x))
        return doubled + x

    options = {"mode": "lite"} if mode == "lite" else {"strict": True}
    compiled = torch.compile(f, backend="xpu_lite", dynamic=True, options=options)
    compiled_loop = torch.compile(loop, backend="xpu_lite", dynamic=True, options=options)
    for n, sign in ((4, 1), (6, -1), (9, 1)):
        x = (torch.rand(n, 3, device=device) * sign).requires_grad_()
        y = x.detach().clone().requires_grad_()
        actual, expected = compiled(x), f(y)
        actual.sum().backward()
        expected.sum().backward()
        _check(mode, (actual, x.grad), (expected, y.grad))
        with torch.no_grad():
            _check(mode, compiled_loop(x), loop(x))
    assert xpu_lite.counters.forward_graphs == 2  # f and loop, each once for every size (subgraphs not counted)
    report = xpu_lite.explain(f, x.detach(), mode=None if mode == "default" else mode)
    rows = {(row[0], row[1]): (row[3], row[4]) for row in report.rows()}
    graph = next(g for g, node in rows if node == "cond")
    assert rows[graph, "cond"] == ("fallback", "control flow: eager's cond calls its subgraphs, each compiled as a graph of "
                                               "its own")
    branches = {rows[f"{graph}_{branch}", node] for branch, node in (("true_graph_0", "sin"), ("false_graph_0", "cos"))}
    assert {decision for decision, _ in branches} == ({"fallback"} if mode == "lite" else {"kernel"}), branches
    torch._dynamo.reset()
    _, sources = xpu_lite.run_and_get_code(torch.compile(f, backend="xpu_lite", dynamic=True, options=options), x.detach())
    assert len(sources) == 3 and "# xpu_lite wrapper for graph graph_" in sources[1], sources  # the graph, then each branch
    assert re.search(r"= torch\.ops\.higher_order\.cond\(buf\d+, _true_graph_0, _false_graph_0, \(", sources[0]), sources[0]
    if mode == "lite":  # a cond in a compile region: its branches are in the region
        def in_region(x: torch.Tensor) -> torch.Tensor:
            with xpu_lite.compile_region():
                y = f(x)
            return y.exp()

        x = torch.randn(5, 3, device=device)
        torch.testing.assert_close(torch.compile(in_region, backend="xpu_lite", mode="lite", dynamic=True)(x), in_region(x),
                                   rtol=RTOL, atol=ATOL)
        rows = {(row[0], row[1]): row[3] for row in xpu_lite.explain(in_region, x, mode="lite").rows()}
        graph = next(g for g, node in rows if node == "cond")
        assert rows[f"{graph}_true_graph_0", "sin"] == rows[f"{graph}_false_graph_0", "cos"] == "kernel", rows
        assert rows[graph, "exp"] == "fallback", rows


@pytest.mark.parametrize("mode", MODES)
def test_scan_and_map_compile_their_subgraphs(device: str, mode: str) -> None:
    """scan's combine_fn and map's body are compiled subgraphs too. Their eager
    implementations call them on slices they cut, whose strides need not be the traced ones:
    the gradient of `ys.sum()` is an expanded zero-stride tensor, and kernels that read it at
    its traced (contiguous) strides gave gradients off by 2.7 (tried 2026-11-27). A subgraph
    makes each operand traced contiguous contiguous first (runtime.Subgraph)."""
    from torch._higher_order_ops import scan
    from torch._higher_order_ops.map import map as map_slices

    def scanned(init: torch.Tensor, xs: torch.Tensor) -> torch.Tensor:
        carry, ys = scan(lambda c, x: (c * 0.9 + x.tanh(), (c * x).sin()), init, xs)
        return carry.sum() + (ys * 2).sum()

    def mapped(xs: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return (map_slices(lambda x, w: (x * w).relu().sum(0), xs, w) + 1).sum()

    for f, shapes, op, body, node in ((scanned, ((3,), (5, 3)), "scan", "scan_combine_graph_0", "tanh"),
                                      (mapped, ((4, 3, 2), (3, 2)), "map_impl", "body_graph_0", "relu")):
        inputs = [torch.randn(*shape, device=device) for shape in shapes]
        got, want = [[t.clone().requires_grad_() for t in inputs] for _ in range(2)]
        actual, expected = _compile(f, mode, dynamic=True)(*got), f(*want)
        actual.backward()
        expected.backward()
        _check(mode, (actual, *(t.grad for t in got)), (expected, *(t.grad for t in want)))
        rows = {(row[0], row[1]): (row[3], row[4])
                for row in xpu_lite.explain(f, *inputs, mode=None if mode == "default" else mode).rows()}
        graph = next(g for g, n in rows if n == op)
        assert rows[graph, op] == ("fallback", f"control flow: eager's {op} calls its subgraphs, each compiled as a graph of "
                                               "its own"), rows
        assert rows[f"{graph}_{body}", node][0] == ("fallback" if mode == "lite" else "kernel"), rows


@pytest.mark.parametrize("mode", (*MODES, "region"))
def test_scan_over_a_transposed_input(device: str, mode: str) -> None:
    """An RNN over time of a batch-first input, `scan(step, h, x.transpose(0, 1))`, whose
    carry is the tanh that its backward reads:
    - eager's scan passes each step a strided row of x. In lite mode every op of the step
      is eager's and reads the rows as they are (a contiguous copy sums in another order:
      this test's sums differed in the last bit, tried 2026-11-27);
    - with kernels, the backward scan's first carry is a zero-stride gradient, so its step
      is traced again from contiguous operands and compiled (it was left to eager);
    - in a compile region (`region`: lite mode, the scan inside `compile_region()`) the
      compile failed with "scan might be aliasing the input or the output!", as Inductor's
      does: regions decomposed `detach` to `alias`, and scan's autograd then recomputed the
      saved copy of the carry from the carry itself and returned it twice."""
    from torch._higher_order_ops import scan

    def recurrence(h: torch.Tensor, x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        def step(c: torch.Tensor, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            new = torch.tanh(row @ w + c) + row.sum() / 64
            return new.tanh(), (new * row).sum(1)
        with xpu_lite.compile_region() if mode == "region" else contextlib.nullcontext():
            carry, ys = scan(step, h, x.transpose(0, 1))
        return carry.sum() + ys.sin().sum()

    compile_mode = "default" if mode == "default" else "lite"
    inputs = [torch.randn(*shape, device=device) for shape in ((16, 24), (16, 5, 24), (24, 24))]
    got, want = [[t.clone().requires_grad_() for t in inputs] for _ in range(2)]
    with capture() as reports:
        actual = _compile(recurrence, compile_mode, dynamic=True)(*got)
        actual.backward()
    expected = recurrence(*want)
    expected.backward()
    _check(mode if mode != "region" else "default", (actual, *(t.grad for t in got)), (expected, *(t.grad for t in want)))

    backward = next(r for r in reports if r.kind == "backward" and not r.subgraph)
    scan_row = next(row for row in backward.rows() if row[2] == "scan")
    assert scan_row[3:] == ("fallback", "control flow: eager's scan calls its subgraphs, each compiled as a graph of its own")
    step = next(r for r in reports if r.kind == "backward" and r.subgraph)
    assert bool(step.kernels) == (mode != "lite"), step.summary_line()


def test_scan_whose_step_would_change_layout_calls_it_as_traced(device: str) -> None:
    """A carry that starts transposed (`h.t()`) keeps that layout through the step, and the
    graph reads scan's last carry at it. Traced again from contiguous operands, the step's
    carry would be contiguous: so it is not, and eager's scan calls the step as traced,
    with the reason (strict=True raises: the step's kernel nodes would run eagerly).
    Compiled from the contiguous trace, the result was wrong (tried 2026-11-27)."""
    from torch._higher_order_ops import scan

    def scanned(h: torch.Tensor, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        carry, ys = scan(lambda c, row: ((c * 0.5 + row).tanh(), (c * row).sum(1)), h.t(), x)
        return carry * torch.arange(carry.numel(), device=device).view(carry.shape), ys

    h, x = torch.randn(3, 6, device=device), torch.randn(4, 6, 3, device=device)
    with capture() as reports:
        actual = _compile(scanned, "default", dynamic=True)(h, x)
    torch.testing.assert_close(actual, scanned(h, x), rtol=RTOL, atol=ATOL)
    assert [r.name for r in reports if r.subgraph] == []
    scan_row = next(row for row in reports[0].rows() if row[2] == "scan")
    assert scan_row[3:] == ("fallback", "control flow: eager's scan calls its subgraphs as traced, not compiled: its kernels read "
                                        "operands at the traced strides, which the slices it passes need not have, and it cannot "
                                        "be traced from contiguous ones: an output would have other strides")
    strict = torch.compile(scanned, backend="xpu_lite", dynamic=True, options={"strict": True})
    with pytest.raises(Exception, match="strict=True and eager's scan calls its subgraphs as traced"):
        strict(h, x)


def test_scan_step_without_kernels_passing_a_view_to_a_cond_with_kernels(device: str) -> None:
    """The step is only a cond, with no kernel of its own, and passes it `row.t()`: the
    branches' kernels read that operand at the strides traced from a contiguous row, so the
    step makes its rows contiguous as a step with kernels does. Taken as eager's scan
    passes them (strided rows of x.transpose(0, 1)), the results were wrong (tried
    2026-11-27)."""
    from torch._higher_order_ops import scan

    def scanned(h: torch.Tensor, x: torch.Tensor, p: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        def step(c: torch.Tensor, row: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            return torch.cond(p, lambda r, c: ((r * 2).t().sin() + c, r.t() * c),
                              lambda r, c: ((r - 1).t().cos() * c, r.t() + c), (row.t(), c))
        return scan(step, h, x.transpose(0, 1))

    inputs = (torch.randn(6, 3, device=device), torch.randn(6, 4, 3, device=device), torch.tensor(True, device=device))
    with capture() as reports:
        actual = _compile(scanned, "default", dynamic=True)(*inputs)
    torch.testing.assert_close(actual, scanned(*inputs), rtol=RTOL, atol=ATOL)
    assert [(r.subgraph, bool(r.kernels)) for r in reports] == [
        ("", False), ("scan_combine_graph_0", False), ("scan_combine_graph_0_true_graph_0", True),
        ("scan_combine_graph_0_false_graph_0", True)]


@torch.compiler.nested_compile_region
def _block(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
    return (x @ w).relu().sin() * 2


@pytest.mark.parametrize("mode", MODES)
def test_nested_compile_region_compiles_the_block_once(device: str, mode: str) -> None:
    """A block marked with torch.compiler.nested_compile_region and called twice is one
    subgraph (invoke_subgraph), compiled once for both calls, kernels and all, with
    gradients; before 2026-11-27 it ran as eager aten calls."""
    def f(x: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return _block(_block(x, w), w).sum(1)

    compiled = _compile(f, mode, dynamic=True)
    for n in (4, 6, 9):
        x, w = torch.randn(n, 8, device=device), torch.randn(8, 8, device=device)
        got, want = [(t.detach().clone().requires_grad_(), u.detach().clone().requires_grad_()) for t, u in ((x, w), (x, w))]
        actual, expected = compiled(*got), f(*want)
        actual.sum().backward()
        expected.sum().backward()
        _check(mode, (actual, got[0].grad, got[1].grad), (expected, want[0].grad, want[1].grad))
    assert xpu_lite.counters.forward_graphs == 1
    rows = {(row[0], row[1]): (row[3], row[4]) for row in xpu_lite.explain(f, x, w, mode=None if mode == "default" else mode).rows()}
    calls = [(graph, node) for graph, node in rows if node.startswith("invoke_subgraph")]
    assert len(calls) == 2 and all(rows[c][1].startswith("control flow: eager's invoke_subgraph calls") for c in calls), rows
    blocks = {graph for graph, _ in rows if graph.endswith("repeated_subgraph0")}
    assert len(blocks) == 1, blocks  # one compiled block for both calls
    assert rows[blocks.pop(), "sin"][0] == ("fallback" if mode == "lite" else "kernel"), rows


@pytest.mark.parametrize("mode", MODES)
def test_automatic_dynamic_compiles_twice_then_never(device: str, mode: str) -> None:
    """dynamic=None (torch.compile's default): the first size is static, the second
    recompiles with a symbolic size, the rest reuse it."""
    torch.manual_seed(0)
    model = _Mlp().to(device)
    compiled = _compile(model, mode)
    with torch.no_grad():
        for batch in (2, 3, 5, 7):
            x = torch.randn(batch, 8, device=device)
            _check(mode, compiled(x), model(x))
    assert xpu_lite.counters.forward_graphs == 2


def test_mark_dynamic_compiles_once(device: str) -> None:
    torch.manual_seed(0)
    model = _Mlp().to(device)
    compiled = torch.compile(model, backend="xpu_lite", mode="lite")
    with torch.no_grad():
        for batch in (2, 3, 5):
            x = torch.randn(batch, 8, device=device)
            torch._dynamo.mark_dynamic(x, 0)
            assert_bitwise(compiled(x), model(x))
    assert xpu_lite.counters.forward_graphs == 1


@pytest.mark.parametrize("mode", MODES)
def test_greedy_generation_with_a_kv_cache(device: str, mode: str) -> None:
    """transformers' `generate` with the model's forward compiled: a prefill graph and one
    decode graph for every cache length (the new token's length 1 is specialized, as in
    every backend), the same tokens as eager's, and each step's logits close to eager's. Lite
    mode's are bitwise those of the program Dynamo traces, run by its eager backend: under
    compile (torch < 2.14) transformers passes attention an explicit causal mask where eager
    passes is_causal, and cuda then runs another attention kernel (1 ulp apart on an H200)."""
    transformers = pytest.importorskip("transformers", reason="needs transformers (scripts/bootstrap.sh installs it)")
    from tools.hf_models import MODELS

    config, model_class, arguments, _ = MODELS["llama"]
    torch.manual_seed(0)
    model = getattr(transformers, model_class)(getattr(transformers, config)(**arguments)).to(device).eval()
    ids = torch.randint(1, 100, (2, 5), device=device)
    settings = {"max_new_tokens": 6, "do_sample": False, "pad_token_id": 0, "return_dict_in_generate": True,
                "output_scores": True}
    forward = model.forward
    with torch.no_grad():
        expected = model.generate(ids, **settings)
        model.forward = torch.compile(forward, backend="eager", dynamic=True)
        traced = model.generate(ids, **settings)
        torch._dynamo.reset()
        model.forward = _compile(forward, mode, dynamic=True)
        actual = model.generate(ids, **settings)
    assert torch.equal(actual.sequences, expected.sequences)
    assert len(actual.scores) == len(expected.scores) == 6
    for got, program, want in zip(actual.scores, traced.scores, expected.scores, strict=True):
        torch.testing.assert_close(got, want, rtol=RTOL, atol=ATOL)
        _check(mode, got, program)
    assert xpu_lite.counters.forward_graphs == 2


class _Wide(torch.nn.Module):
    """In gradient buckets of 1.1 MB, its 512 x 512 weight fills one: DDPOptimizer splits
    its graph in two. (A module of the user's own: Dynamo does not start a frame inside
    torch.nn, such as nn.Sequential's forward, which DDP calls.)"""

    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = torch.nn.Linear(8, 512), torch.nn.Linear(512, 512), torch.nn.Linear(512, 4)
        self.norm = torch.nn.LayerNorm(512)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(self.norm(self.b(torch.nn.functional.gelu(self.a(x))))) * 2


@pytest.mark.parametrize("mode", MODES)
def test_distributed_data_parallel(device: str, mode: str, tmp_path) -> None:
    """A compiled DistributedDataParallel model (one rank). Dynamo splits its graph at the
    gradient buckets (DDPOptimizer), compiling each piece as a graph of its own, and calls
    each compiled piece once while compiling, on fake tensors, which it expects AOTAutograd
    to answer with fake outputs. Before 2026-11-28 that call was not counted as AOTAutograd's,
    so the user's first call got those fake outputs (a FakeTensor of size (s77, 4)), and a
    training step failed in the backward."""
    with one_rank(str(tmp_path / "store")):
        torch.manual_seed(0)
        model = _Wide().to(device)
        eager = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(model), bucket_cap_mb=1.1)
        twin = torch.nn.parallel.DistributedDataParallel(copy.deepcopy(model), bucket_cap_mb=1.1)
        compiled = _compile(twin, mode, dynamic=True)
        with capture() as reports:
            for batch in (3, 5):
                x = torch.randn(batch, 8, device=device)
                actual, expected = compiled(x), eager(x)
                _check(mode, actual, expected)
                actual.square().sum().backward()
                expected.square().sum().backward()
                _check(mode, [p.grad for p in twin.parameters()], [p.grad for p in eager.parameters()])
    assert xpu_lite.counters.forward_graphs == 2  # DDPOptimizer's two pieces, each compiled once
    pieces = sorted({report.ddp_bucket for report in reports})
    assert len(pieces) == 2 and all(pieces)  # every graph compiled is a piece, explain says
    assert f"{', '.join(pieces)}: pieces of what Dynamo traced, split" in str(xpu_lite.ExplainReport(tuple(reports)))


def test_processes_compiling_at_once_share_the_kernel_cache(tmp_path, monkeypatch) -> None:
    """A node's ranks compile the same kernels at once, into one cache directory. Each
    must import a whole kernel: written in place, one imported another's half-written file
    (a module without the kernel: 24 of 160 imports failed so). Threads stand in for the
    processes here: the file is shared alike."""
    import threading

    from xpu_lite import config, runtime

    monkeypatch.setenv(config.ENV_CACHE_DIR, str(tmp_path))
    workers, rounds = 4, 30
    start, failures = threading.Barrier(workers), []

    def compile_kernels() -> None:
        for r in range(rounds):
            source = f"def kernel():\n    return {r}\n" + "# a long kernel\n" * 200_000
            start.wait()
            try:
                assert runtime.kernel_function("kernel", source)() == r
            except BaseException as exc:  # noqa: BLE001 - counted, then asserted on
                failures.append(repr(exc))

    threads = [threading.Thread(target=compile_kernels) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left
