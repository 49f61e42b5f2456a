"""Kernels for ops that place their inputs' elements at positions of their own: cat,
constant_pad_nd (F.pad), slice_scatter, select_scatter, diagonal_scatter, flip, repeat (lowering/indexing.py). They move
values without arithmetic, so the compiled results are bitwise equal to eager's in every
dtype, also in the default mode; one kernel serves every size.
"""
from __future__ import annotations

import dataclasses
import re

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.lowering import DecisionKind, ir
from xpu_lite.report import capture

from .conftest import assert_bitwise, assert_eager_formula
from .test_kernels import _run_samples

OPINFOS = [("cat", ""), ("nn.functional.pad", "constant"), ("slice_scatter", ""), ("select_scatter", ""),
           ("diagonal_scatter", ""), ("flip", ""), ("repeat", "")]
LOWERED = {"cat": "aten.cat.default", "nn.functional.pad": "aten.constant_pad_nd.default",
           "slice_scatter": "aten.slice_scatter.default", "select_scatter": "aten.select_scatter.default",
           "diagonal_scatter": "aten.diagonal_scatter.default", "flip": "aten.flip.default", "repeat": "aten.repeat.default"}
DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.int64, torch.bool]


def _tensors(sample) -> list[torch.Tensor]:
    return list(sample.input) if isinstance(sample.input, (list, tuple)) else [sample.input]


def _small(sample) -> bool:
    return sum(t.numel() for t in _tensors(sample)) <= 16384


def _first_samples(samples: list) -> list:
    """The first three, and the first three whose inputs all hold more than one element
    (repeat's first samples are 0-dim and empty: not lowered, nothing to place)."""
    chosen = samples[:3] + [s for s in samples if all(t.numel() > 1 for t in _tensors(s))][:3]
    return list({id(s): s for s in chosen}.values())


@pytest.mark.parametrize("where", ["default mode", "lite region"])
@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
@pytest.mark.parametrize("name,variant", OPINFOS, ids=[n for n, _ in OPINFOS])
def test_opinfo_samples_are_bitwise_eager(device: str, name: str, variant: str, dtype: torch.dtype, where: str) -> None:
    from torch.testing._internal.common_methods_invocations import op_db

    op = next(o for o in op_db if o.name == name and o.variant_test_name == variant)
    if dtype not in op.supported_dtypes(device):
        pytest.skip(f"{name} does not support {dtype} in eager on {device}")
    samples = _first_samples([s for s in op.sample_inputs(device, dtype) if _small(s)])

    def check(out, fn, sample):
        assert_bitwise(out, fn(sample.input, *sample.args))
        assert out.stride() == fn(sample.input, *sample.args).stride() or out.numel() <= 1

    with capture() as reports:
        _run_samples(op, samples, where, check)
    lowered = any(d.op == LOWERED[name] and d.kind is DecisionKind.KERNEL for r in reports for d in r.decisions)
    assert lowered, f"no sample of {name} was lowered to a kernel"


def placements(x: torch.Tensor, y: torch.Tensor, z: torch.Tensor) -> tuple[torch.Tensor, ...]:
    joined = torch.cat([x, y, x[:, 1:3]], dim=1)  # a view read from its base, at an offset
    padded = F.pad(x, (1, -1, 2, 0), value=-1.5)  # grows one side, crops another
    scattered = torch.slice_scatter(torch.zeros_like(joined), y, dim=1, start=1, end=1 + y.shape[1])
    strided = torch.slice_scatter(x, x[:, ::2] * 2, 1, 0, None, 2)  # every other column
    selected = torch.select_scatter(x, z, 0, -1)
    below = torch.diagonal_scatter(x, x.diagonal(-1) * 2, -1)  # the diagonal under the main one
    t = x.unsqueeze(1).expand(-1, 3, -1)
    across = torch.diagonal_scatter(t, t.diagonal(1, 2, 0) * 2, 1, 2, 0)  # dims (2, 0) of a 3-D tensor, a broadcast one
    return joined, padded, scattered, strided, selected, below, across, x.flip(0, -1), x.repeat(2, 1, 3)


def test_one_kernel_source_per_op_for_all_sizes(device: str) -> None:
    compiled = torch.compile(placements, backend="xpu_lite", dynamic=True)
    sizes = ((17, 19), (23, 29), (31, 37))
    with capture() as reports:
        for n, m in sizes:
            x, y, z = torch.randn(n, m, device=device), torch.randn(n, 4, device=device), torch.randn(m, device=device)
            assert_bitwise(compiled(x, y, z), placements(x, y, z))
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    kinds = {d.op: d.kind for d in reports[0].decisions}
    assert all(kinds[op] is DecisionKind.KERNEL for op in LOWERED.values()), kinds
    for source in reports[0].kernels:
        assert not re.search(r"\b(17|19|23|29|31|37)\b", source), f"a dynamic size was baked into the kernel:\n{source}"
    assert any("mask=xmask & tmp" in source for source in reports[0].kernels)  # loads only where the input holds the element


def test_every_dtype_moves_bitwise(device: str) -> None:
    compiled = torch.compile(placements, backend="xpu_lite", dynamic=True)
    for dtype in (torch.float16, torch.bfloat16, torch.int32, torch.int64):
        x, y, z = (torch.randn(*shape, device=device).mul(100).to(dtype) for shape in ((4, 6), (4, 4), (6,)))
        assert_bitwise(compiled(x, y, z), placements(x, y, z))
    special = torch.tensor([[float("nan"), -0.0, float("inf"), -float("inf"), 1e-45, 3.0]] * 4, device=device)
    x, y, z = special, special[:, :4], -special[0]
    assert_bitwise(compiled(x, y, z), placements(x, y, z))  # NaN, -0.0, inf, subnormals as they were


def test_consumers_fuse_into_the_placing_kernel(device: str) -> None:
    def fn(x, y):
        return torch.cat([x, y], dim=-1).relu() * 2, F.pad(x, (2, 2)).sigmoid()

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    x, y = torch.randn(5, 6, device=device), torch.randn(5, 3, device=device)
    with capture() as reports:
        out = compiled(x, y)
    torch.testing.assert_close(out, fn(x, y), rtol=1e-5, atol=1e-5)
    assert len(reports[0].kernels) == 2, reports[0].kernels  # cat+relu+mul, pad+sigmoid
    assert xpu_lite.counters.kernel_launches == 2


def test_inputs_computed_in_the_graph_are_read_from_memory(device: str) -> None:
    def fn(x):
        y = x.exp()
        return torch.cat([y, y[:, :2] + 1], dim=1), F.pad(y, (1, 1))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (3, 8):
        x = torch.randn(n, 5, device=device)
        torch.testing.assert_close(compiled(x), fn(x), rtol=1e-5, atol=1e-5)


def test_a_computed_scalar_they_place_is_stored_first(device: str) -> None:
    """A 0-dim value waits to be computed inline by the next pointwise run; a placing op
    reading it (through a view) must read it from memory, so it gets its own kernel first
    (the cat read an unwritten buffer before)."""
    def fn(x, s):
        return torch.cat([x, (s * 2).exp().unsqueeze(0)]) + 1, F.pad((s + 1).reshape(1), (1, 1)) * 2

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (3, 6):
        x, s = torch.randn(n, device=device), torch.tensor(0.3, device=device)
        torch.testing.assert_close(compiled(x, s), fn(x, s), rtol=1e-6, atol=0)
    assert xpu_lite.counters.fallback_nodes == 0


def _setitems(x, y, v):
    z = x.clone()
    z[:, 1:] = y  # functionalized: copy(slice, y) then slice_scatter; y broadcast and cast
    z[:, 0] = v  # a 0-dim value: copy then select_scatter
    z[-1] = y[0]  # a 0-dim view broadcast along a row
    return z


@pytest.mark.parametrize("dtype", DTYPES, ids=[str(d).removeprefix("torch.") for d in DTYPES])
def test_setitem_copies_are_kernels(device: str, dtype: torch.dtype) -> None:
    """`z[...] = y` functionalizes to aten.copy(view, y): a kernel storing y broadcast to the
    view's shape and cast to its dtype (the view's old values are not read), bitwise equal
    to eager in every dtype and for a float16 y into any dtype; one source for all sizes."""
    compiled = torch.compile(_setitems, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (4, 6, 9):
            x = torch.randn(n, n, device=device).mul(50).to(dtype)
            y = torch.randn(n - 1, device=device).mul(50).to(torch.float16)
            v = torch.tensor(3.5, device=device).to(dtype)
            assert_bitwise(compiled(x, y, v), _setitems(x, y, v))
    assert xpu_lite.counters.forward_graphs == 1 and not reports[0].fallbacks, reports[0].fallbacks
    copies = [d for d in reports[0].decisions if d.op == "aten.copy.default"]
    assert len(copies) == 3 and all(d.kind is DecisionKind.KERNEL for d in copies), copies
    assert len(reports[0].kernels) == len({d.kernel.split()[0] for d in reports[0].decisions if d.kernel})


def _pieces(a, b):  # a buffer filled in slices: `out[:, :k] = ...` is out[0:][:, :k] written back twice
    out = torch.empty(a.shape[0], a.shape[1] + b.shape[1], device=a.device)
    out[:, :a.shape[1]] = a * 3
    out[:, a.shape[1]:] = b.neg()
    return out


def _rows(a, b):
    out = torch.zeros(2, *a.shape, device=a.device)
    out[0] = a + 1
    out[1] = b.relu()
    return out * 3, a * 2


def test_a_buffer_filled_in_slices_is_one_kernel(device: str) -> None:
    """AOTAutograd writes `out[:, a:b] = v` back through each view: the outer write-back is
    a slice_scatter of every element, which is its source (replaced by it before fusion,
    as Inductor's post-grad pass does), and the next piece's copy only takes its
    destination's sizes: every piece of the buffer in one kernel storing it once (2 kernels
    for two slices, 3 for two rows before). Bitwise eager's, eager's strides, one source
    for all sizes; explain names the replaced nodes beside their sources."""
    cases = ((_pieces, lambda n: ((n, 3), (n, 4)), 2), (_rows, lambda n: ((n, 3), (n, 3)), 0))  # rows: select_scatters
    for fn, shapes, replaced in cases:
        torch._dynamo.reset()
        compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
        with capture() as reports:
            for n in (5, 7):  # no size equal to another (duck sizing would compile again)
                a, b = (torch.randn(*s, device=device) for s in shapes(n))
                got, want = compiled(a, b), fn(a, b)
                assert_bitwise(got, want)
                for g, w in zip(*(r if isinstance(r, tuple) else (r,) for r in (got, want)), strict=True):
                    assert g.stride() == w.stride()
        (report,) = reports
        buffer = [k for k in report.kernels if "slice_scatter" in k or "select_scatter" in k]
        assert len(buffer) == 1 and buffer[0].count("tl.store(") == 1, report.kernels
        assert not any(d.op.endswith("_scatter.default") and d.kind is not DecisionKind.KERNEL for d in report.decisions)
        notes = [d.note for d in report.decisions if "a slice_scatter of every element is its source" in d.note]
        assert len(notes) == replaced, [d.note for d in report.decisions]
    got = compiled(*(torch.randn(5, 3, device=device) for _ in range(2)))
    assert got[0].data_ptr() != got[1].data_ptr()  # two outputs, two buffers


def _update(x, y):
    out = x.clone()
    out[:, 1:3] = y.exp()
    return out


def test_a_clone_written_in_a_slice_is_computed_in_the_write_back(device: str) -> None:
    """The copy into `out[:, 1:3]` takes only the slice's sizes, so nothing reads the
    clone but the write-back (which keeps its other elements): the clone is computed
    there, never stored. Training: the forward stores `exp` (saved for the backward) and
    the result, 2 kernels (3 before, the clone's own storing it); gradients as eager's."""
    compiled = torch.compile(_update, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (5, 7):
            x, y = torch.randn(n, 6, device=device), torch.randn(n, 2, device=device)
            xc, yc = x.clone().requires_grad_(), y.clone().requires_grad_()
            x.requires_grad_(), y.requires_grad_()
            got, want = compiled(xc, yc), _update(x, y)
            assert_bitwise(got, want)
            grad = torch.randn_like(want)
            got.backward(grad)
            want.backward(grad)
            assert_bitwise(xc.grad, x.grad)
            torch.testing.assert_close(yc.grad, y.grad, rtol=1e-5, atol=1e-5)  # exp's gradient: a product in a kernel
    forward = next(r for r in reports if r.kind == "forward")
    assert len(forward.kernels) == 2 and sum(k.count("tl.store(") for k in forward.kernels) == 2, forward.kernels
    clone = next(d for d in forward.decisions if d.op == "aten.clone.default")
    stores = [line for k in forward.kernels for line in k.splitlines() if "tl.store(" in line]
    assert clone.kernel and not any(line.endswith(f"# {clone.node}") for line in stores), stores


def test_training_gradients_pass_through_placing_kernels(device: str) -> None:
    """The backward graphs of cat, pad and slicing are slices, negative pads and
    slice_scatters: lowered too, and the gradients equal eager's bit for bit."""
    def fn(x, y):
        return (torch.cat([x, y], dim=1) * 3).sum() + F.pad(x, (1, 2)).square().sum() + x[:, 1:4].sum()

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (4, 7):
            x = torch.randn(n, 5, device=device, requires_grad=True)
            y = torch.randn(n, 3, device=device, requires_grad=True)
            compiled(x, y).backward()
            grads = x.grad, y.grad
            x.grad = y.grad = None
            fn(x, y).backward()
            torch.testing.assert_close(grads, (x.grad, y.grad), rtol=1e-5, atol=1e-5)
    assert xpu_lite.counters.graphs_compiled == 2  # one forward and one backward for both sizes
    backward = next(r for r in reports if r.kind == "backward")
    placed = {d.op for d in backward.decisions if d.kind is DecisionKind.KERNEL}
    assert placed & {"aten.constant_pad_nd.default", "aten.slice_scatter.default"}, placed


def test_cat_skips_1d_empty_tensors_as_eager_does(device: str) -> None:
    def fn(x, cache):  # an empty KV cache, as transformers' DynamicCache starts
        return torch.cat([cache, x, cache], dim=-2) * 2

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 5):
            x, cache = torch.randn(2, n, 4, device=device), torch.tensor([], device=device)
            assert_bitwise(compiled(x, cache), fn(x, cache))
    assert {d.op: d.kind for d in reports[0].decisions}["aten.cat.default"] is DecisionKind.KERNEL


def test_what_is_not_lowered_says_why() -> None:
    def fn(x):
        return torch.cat([x, x.to(torch.complex64)]), F.pad(x.double(), (1, 1))

    report = xpu_lite.explain(fn, torch.randn(3, 4), dynamic=True)
    reasons = {row[2]: row[4] for row in report.rows()}
    assert "a complex64 result; this lowering takes float32" in reasons["aten.cat.default"]
    assert "a float64 result; this lowering takes float32" in reasons["aten.constant_pad_nd.default"]


def test_symbolic_positions_are_normalized_by_the_wrapper(device: str) -> None:
    """A SymInt start or index may be negative at run time (counted from the end): the
    wrapper computes the position, as torch would, for the one kernel."""
    def fn(x, src, i):
        return torch.slice_scatter(x, src, 0, i, i + 2), torch.select_scatter(x, src[0], 0, i)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for i in (3, -5, 0, -8, 6):
            x, src = torch.randn(8, 5, device=device), torch.randn(2, 5, device=device)
            assert_bitwise(compiled(x, src, i), fn(x, src, i))
    assert xpu_lite.counters.graphs_compiled == 1 and xpu_lite.counters.fallback_nodes == 0
    assert " if " in reports[0].source and "a size the kernel cannot compute" in reports[0].source


def test_masked_loads_and_coordinates_only_in_untiled_kernels() -> None:
    """Pointwise kernels (cat, pad) and reductions (adaptive pools' windows) compute
    coordinates and masks; a tiled kernel's lanes are not one flat index, so it does not."""
    s0 = ir.XINDEX  # any index expression will do
    buf = ir.Buffer("in_ptr0", torch.float32, (8,), (1,))
    out = ir.Buffer("out_ptr0", torch.float32, (8,), (1,))
    values = (ir.SymValue(s0, torch.int64), ir.Constant(4, torch.int64), ir.Compute("lt", (0, 1), torch.bool, "lt"),
              ir.Load("in_ptr0", s0, torch.float32, mask=2))
    kernel = ir.Kernel("kernel_0", 8, (buf,), (out,), values, (ir.Store("out_ptr0", s0, 3),), ("cat",))
    assert ir.verify(kernel) is kernel
    assert ir.verify(dataclasses.replace(kernel, rnumel=4)) is not None
    with pytest.raises(ir.IRError, match="under a mask"):
        ir.verify(dataclasses.replace(kernel, values=values[:3] + (ir.Load("in_ptr0", s0, torch.float32, mask=1),)))
    tile = ir.Tile(0, 1, 8, 1)
    with pytest.raises(ir.IRError, match="computes a coordinate"):
        ir.verify(dataclasses.replace(kernel, tile=tile))
    masked = (ir.Constant(True, torch.bool), ir.Load("in_ptr0", ir.YINDEX, torch.float32, mask=0))
    with pytest.raises(ir.IRError, match="under a mask"):
        ir.verify(dataclasses.replace(kernel, values=masked, stores=(ir.Store("out_ptr0", ir.YINDEX, 1),), tile=tile))


def test_arange_is_the_coordinate(device: str) -> None:
    """Aranges with an integer start and step (ints, SymInts, whole floats; any end) are
    kernels: start + i * step in int64, cast to the result dtype; a reduction of one reads
    it from memory (coordinates stay in pointwise kernels). A fractional start or step
    stays eager (eager accumulates it in a type that differs by device)."""
    def fn(x, n):
        rows = torch.arange(x.shape[0], device=x.device)
        cols = torch.arange(3, 3 + 2 * x.shape[1], 2, dtype=torch.int32, device=x.device)
        down = torch.arange(n, -n, -3, device=x.device)
        floats = torch.arange(x.shape[0], dtype=torch.float32, device=x.device), torch.arange(-4.0, 9.5, 2.0, device=x.device)
        return x * rows[:, None] + cols, down, (rows * 2).sum(), *floats, torch.arange(0.5, 3, device=x.device)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for m, n in ((5, 7), (9, 4), (12, 10)):
            x = torch.randn(m, 3, device=device)
            assert_eager_formula(compiled(x, n), fn(x, n))
    assert xpu_lite.counters.forward_graphs == 1
    decided = [(d.op, d.kind, d.why()) for d in reports[0].decisions if d.op == "aten.arange.start_step"]
    assert [kind for _, kind, _ in decided].count(DecisionKind.KERNEL) == 5, decided
    assert "a start or step that is not an integer" in decided[-1][2]


NEAREST = [("nearest", {"scale_factor": 2.0}), ("nearest", {"scale_factor": 2.1}), ("nearest", {"scale_factor": 0.6}),
           ("nearest", "size"), ("nearest-exact", {"scale_factor": 1.5}), ("nearest-exact", "size")]


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("mode,scaling", NEAREST, ids=[f"{m}-{s if isinstance(s, str) else s['scale_factor']}" for m, s in NEAREST])
def test_nearest_interpolation_is_kernels_with_eagers_indices(device: str, mode: str, scaling, dims: int) -> None:
    """F.interpolate's nearest modes: bitwise eager's values and strides at every size, one
    graph, no eager call. The source index is eager's floor(o * scale) in float32 with
    scale = float32(1 / scale_factor) (torch._decomp's isize / (isize * s) is a SymFloat,
    float64 tensor ops in the graph), and eager's cpu 2-D kernel's o and o >> 1 where the
    output is as long as the input or twice (scale 2.1 at 5 and 9: 10 and 18; aot_eager
    and Inductor differ from eager there)."""
    def fn(x, n):
        kwargs = {"size": (n + 2,) * dims} if scaling == "size" else scaling
        return F.interpolate(x, mode=mode, **kwargs)

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (5, 9, 13):
        x = torch.randn(2, 3, *[n] * dims, device=device)
        actual, expected = compiled(x, n), fn(x, n)
        assert_bitwise(actual, expected)
        assert actual.stride() == expected.stride()
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.forward_graphs == 1


@pytest.mark.parametrize("mode,dims", [("linear", 1), ("bilinear", 2), ("bicubic", 2), ("trilinear", 3)])
def test_linear_and_cubic_interpolation_scales_are_float32_kernels(device: str, mode: str, dims: int) -> None:
    """With align_corners=True or an output size, torch._decomp's scale is a quotient of
    symbolic sizes: a SymFloat, which AOTAutograd turns into float64 tensor ops (9-14
    eager calls per call). Computed as a float32 0-dim kernel value, it is the same number
    (both exact ints, one rounding): the same bits as aot_eager running torch's graph on
    cpu. On a gpu within 4 ulps of the largest value, bicubic's 16 weighted terms (weights
    of both signs, summing to ~1.6 in magnitude) within 8: FMA contraction differs."""
    def fn(x, n):
        return (F.interpolate(x, mode=mode, align_corners=True, scale_factor=1.7),
                F.interpolate(x, mode=mode, align_corners=False, size=(n + 3,) * dims))

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    reference = torch.compile(fn, backend="aot_eager", dynamic=True)
    for n in (5, 8):
        x = torch.randn(2, 3, *[n] * dims, device=device)
        assert_eager_formula(compiled(x, n), reference(x, n), ulps=8 if mode == "bicubic" else 4)
        torch.testing.assert_close(compiled(x, n), fn(x, n), rtol=1e-5, atol=1e-5)
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.forward_graphs == 1


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_uint8_linear_interpolation_is_eagers_kernel(device: str, mode: str) -> None:
    """Eager's cpu kernel interpolates a uint8 image in fixed point; torch._decomp's
    decomposition computes in float and rounds: 16% of a bilinear sample's values came
    out one apart (before 2026-11-26). A uint8 input keeps the op: eager's result, and the
    reason says why. On cuda eager has no uint8 kernel: the kept op raises eager's error, and
    explain raises it too, the report in its note."""
    fn = lambda x: F.interpolate(x, size=(9, 11), mode=mode)  # noqa: E731
    x = torch.randint(0, 256, (1, 3, 5, 6), dtype=torch.uint8, device=device)
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    try:
        expected = fn(x)
    except NotImplementedError as e:
        with pytest.raises(NotImplementedError, match=re.escape(str(e))):
            compiled(x)
        with pytest.raises(NotImplementedError, match=re.escape(str(e))) as raised:
            xpu_lite.explain(fn, x)
        report = "\n".join(raised.value.__notes__)
        assert "xpu_lite.explain: the call raised" in report and "a uint8 input keeps the op" in report, report
    else:
        assert_bitwise(compiled(x), expected)
        reasons = [row[4] for row in xpu_lite.explain(fn, x).rows() if row[3] == "fallback"]
        assert any("a uint8 input keeps the op" in why for why in reasons), reasons


def test_upsample_overloads_called_directly_with_keyword_scales(device: str) -> None:
    """The `.default` overloads take their scales positionally or by name (scales_h, ...),
    and a given scale wins over the output size, as in eager."""
    aten = torch.ops.aten

    def fn(x):
        return (aten.upsample_nearest2d.default(x, [7, 9], scales_w=1.7), aten.upsample_nearest2d.default(x, [7, 9], 1.2, 1.7),
                aten.upsample_nearest1d.default(x[0], [9], scales=1.7), aten._upsample_nearest_exact3d.default(x[None], [2, 7, 9], scales_h=1.1))

    x = torch.randn(2, 3, 5, 6, device=device)
    assert_bitwise(torch.compile(fn, backend="xpu_lite", dynamic=True)(x), fn(x))
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.forward_graphs == 1
    assert xpu_lite.counters.kernels_compiled > 0
    linear = lambda t: aten.upsample_bilinear2d.default(t, [7, 9], align_corners=True, scales_w=1.7)  # noqa: E731
    torch.testing.assert_close(torch.compile(linear, backend="xpu_lite", dynamic=True)(x), linear(x), rtol=1e-5, atol=1e-5)


def test_nearest_interpolation_channels_last_and_gradients(device: str) -> None:
    x = torch.randn(2, 5, 6, 7, device=device).to(memory_format=torch.channels_last).requires_grad_()
    fn = lambda t: F.interpolate(t, scale_factor=2.1, mode="nearest") * 3  # noqa: E731
    actual = torch.compile(fn, backend="xpu_lite", dynamic=True)(x)
    expected = fn(x)
    assert_bitwise(actual, expected)
    assert actual.stride() == expected.stride()
    (grad,) = torch.autograd.grad(actual.sum(), x)
    (want,) = torch.autograd.grad(expected.sum(), x)
    torch.testing.assert_close(grad, want, rtol=1e-6, atol=1e-6)
    assert xpu_lite.counters.fallback_nodes == 0


@pytest.mark.parametrize("dims", [1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_half_nearest_interpolation_gradients_add_in_float32(device: str, dtype: torch.dtype, dims: int) -> None:
    """The gradient of a nearest upscaling adds each input's copies (5**dims of them here).
    Eager's backward kernels add in float32 and round once (cpu and cuda). _unsafe_index's
    derivative, an index_put that adds, added float16 in the dtype (3-6x eager's error)
    and left bfloat16 eager (no bfloat16 atomic add) until 2026-11-26: the lookup is now
    in float32, cast back, so its gradient adds float32. Bitwise eager's on cpu; a GPU's
    atomic adds run in any order, within the dtype's tolerance there."""
    def fn(x, w):
        y = F.interpolate(x, scale_factor=5, mode="nearest")
        return y, torch.autograd.grad((y * w).sum(), x)[0]

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n in (2, 3):
        x = torch.randn(1, 2, *[n] * dims, device=device, dtype=dtype, requires_grad=True)
        w = torch.randn(1, 2, *[5 * n] * dims, device=device, dtype=dtype)
        actual, expected = compiled(x, w), fn(x, w)
        if device == "cpu":
            assert_bitwise(actual, expected)
        else:
            torch.testing.assert_close(actual, expected)
    assert xpu_lite.counters.fallback_nodes == 0


@pytest.mark.parametrize("dtype,exact", [(torch.float32, 2**24), (torch.float16, 2048), (torch.bfloat16, 256)],
                         ids=["float32", "float16", "bfloat16"])
def test_float_aranges_are_exact_integers_rounded_once(device: str, dtype: torch.dtype, exact: int) -> None:
    """Bitwise eager's up to the length where every value is exact in the dtype; past it,
    the kernel's value is the exact integer rounded once (arange in float64, then cast),
    where eager's vectorized cpu loop rounds each vector's first value before adding the
    step (fp16, bf16): a compiled kernel's documented difference from eager."""
    compiled = torch.compile(lambda k: torch.arange(-3, k, 2, dtype=dtype, device=device), backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for k in (9, exact // 2, exact):
            assert_bitwise(compiled(k), torch.arange(-3, k, 2, dtype=dtype, device=device))
        beyond = exact * 3 + 7 if dtype is not torch.float32 else exact + 1001
        assert_bitwise(compiled(beyond), torch.arange(-3, beyond, 2, dtype=torch.float64, device=device).to(dtype))
    assert xpu_lite.counters.fallback_nodes == 0, [d.why() for r in reports for d in r.fallbacks]
    assert xpu_lite.counters.forward_graphs == 1


@pytest.mark.parametrize("dtype", [torch.uint8, torch.int8, torch.int16], ids=["uint8", "int8", "int16"])
def test_small_integer_aranges_wrap_as_eagers(device: str, dtype: torch.dtype) -> None:
    """uint8/int8/int16 aranges are kernels (since 2026-11-27; they were eager calls):
    start + i * step in int64, wrapped to the dtype, as eager casts its int64 values
    (`arange(250, 260, dtype=uint8)` passes 255 to 0), wherever they are read: added,
    multiplied, cast to float, reduced; a SymInt start too. Three sizes, one graph."""
    def fn(x, n, s):
        return (torch.arange(n, dtype=dtype, device=x.device) + x, torch.arange(-3, n, dtype=dtype, device=x.device),
                torch.arange(s, s + 3 * n, 3, dtype=dtype, device=x.device) * 2,
                torch.arange(0, 100 * n, 100, dtype=dtype, device=x.device).float(),
                torch.arange(250, 250 + n, dtype=dtype, device=x.device).amax())

    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    for n, s in ((5, 120), (9, 126), (12, 250)):
        x = torch.randint(0, 100, (n,), dtype=dtype, device=device)
        assert_bitwise(compiled(x, n, s), fn(x, n, s))
    assert xpu_lite.counters.fallback_nodes == 0 and xpu_lite.counters.forward_graphs == 1


def test_an_arange_on_a_device_named_without_an_index() -> None:
    """`torch.arange(..., device="cuda")` makes its result on cuda:0: the same device, a
    kernel (the first H100 run found the float aranges falling back as "another device",
    torch.device("cuda") != torch.device("cuda:0")). Another index or type is not."""
    from xpu_lite.lowering.indexing import _same_device
    assert _same_device(None, torch.device("cuda", 0)) and _same_device("cuda", torch.device("cuda", 0))
    assert _same_device(torch.device("xpu"), torch.device("xpu", 1)) and _same_device("cpu", torch.device("cpu"))
    assert not _same_device("cuda:1", torch.device("cuda", 0)) and not _same_device("cpu", torch.device("cuda", 0))
    assert not _same_device("xpu", torch.device("cuda", 0))


def test_a_graph_with_no_tensor_input_runs_where_it_makes_its_tensors() -> None:
    """`torch.arange(k, device="cuda")` for an int k: a graph with no tensor input. Its
    kernels run on the device of the tensors it makes (Dynamo's example values), not on cpu
    (where a cuda result would be an `other device` fallback)."""
    from xpu_lite import _torch_compat as compat

    graph = torch.fx.Graph()
    k = graph.placeholder("k")
    made = graph.call_function(torch.arange, (k,))
    made.meta["example_value"] = torch.empty(3, device="meta")
    graph.output(made)
    gm = torch.fx.GraphModule({}, graph)
    assert compat.fake_tensor_device([3], gm) == "meta"
    assert compat.fake_tensor_device([torch.ones(2), 3], gm) == "cpu"  # a tensor input decides
    made.meta["example_value"] = torch.empty(3)
    assert compat.fake_tensor_device([3], gm) == "cpu"


def test_a_size_one_dim_gives_masks_known_while_building(device: str) -> None:
    """Along a dim of size 1 an element's coordinate is the constant 0, so a placing op's
    mask there is known while the kernel is built: every lane (a step of 2 over one
    element) or none (an empty source): no load is masked by a constant and no `where`
    picks by one (it is the value picked, with no load of the other). Before, the
    mask was a Python bool in the kernel, which the interpreter cannot `&` with the lane
    mask ("mask has unsupported dtype"; found by tools/op_chains.py, seed 2032 at
    --length 8 --training: the gradient of an expand, then a step along the new dim)."""
    def fn(x):
        every = torch.slice_scatter(torch.zeros_like(x), x * 2, 1, 0, None, 2)
        none = torch.slice_scatter(x, x[:, 1:] * 2, 1, 1)
        return every, none

    def chain(t):
        return F.pad(t[1:-1], (1, 2)).unsqueeze(0).expand(2, -1, -1, -1)[:, ::2]

    compiled, compiled_chain = (torch.compile(f, backend="xpu_lite", dynamic=True) for f in (fn, chain))
    with capture() as reports:
        for n in (3, 5):
            x = torch.randn(n, 1, 4, device=device)
            for a, e in zip(compiled(x), fn(x), strict=True):
                assert_bitwise(a, e)
            ours, eagers = (torch.randn(3, n, 4, device=device).requires_grad_() for _ in range(2))
            with torch.no_grad():
                eagers.copy_(ours)
            for f, leaf in ((compiled_chain, ours), (chain, eagers)):
                out = f(leaf)
                out.backward(torch.arange(out.numel(), dtype=out.dtype, device=device).reshape(out.shape))
            assert_bitwise(ours.grad, eagers.grad)
    scatters = [d for r in reports for d in r.decisions if d.op == "aten.slice_scatter.default"]
    assert len(scatters) >= 4 and all(d.kind is DecisionKind.KERNEL for d in scatters), scatters
    for kernel in (k for r in reports for k in r.kernels):
        constants = set(re.findall(r"^\s*(tmp\d+) = (?:True|False)$", kernel, re.M))
        masks = set(re.findall(r"mask=xmask & (tmp\d+)", kernel))
        picks = set(re.findall(r"tl\.where\((tmp\d+),", kernel))
        assert not constants & (masks | picks), kernel


def rotary_embedding(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
    return x * cos + torch.cat((-x2, x1), dim=-1) * sin


def placed_producers(a: torch.Tensor, b: torch.Tensor, h: torch.Tensor, f: torch.Tensor) -> tuple[torch.Tensor, ...]:
    """Pointwise producers only placing ops read (inlining.inlined_producers)."""
    return (F.pad(a + b, (1, 2)), torch.cat([h * 3, f], dim=0), (a * b).flip(0), (a * 2 - b).repeat(2, 1),
            F.pad(1 / a, (2, 0), value=-1.0), torch.cat([(b - a)[1:, ::2], b[:, :2]]))


def test_a_producer_only_placing_ops_read_is_computed_where_they_read_it(device: str) -> None:
    """`-x2` in rotary embeddings' `cat((-x2, x1))` (and in its gradient `grad * sin`, read
    through slices by a neg and the slice_scatters) is computed in the placing op's kernel
    at the positions it reads, from its inputs loaded there: no kernel of its own storing
    it first (inlining.inlined_producers). Slices with a start and a step, broadcast
    inputs, masked positions (a pad reads outside its input: 1 / 0 there, never picked), a
    half value promoted by cat
    (rounded as its tensor holds it), flip and repeat; bitwise equal to eager."""
    rotary, placing = rotary_embedding, placed_producers
    compiled_rotary, compiled_placing = (torch.compile(f, backend="xpu_lite", dynamic=True) for f in (rotary, placing))
    with capture() as reports:
        for n in (3, 5):
            x = torch.randn(2, n, 8, device=device, requires_grad=True)
            cos, sin = torch.randn(n, 8, device=device), torch.randn(n, 8, device=device)
            ours, eagers = compiled_rotary(x, cos, sin), rotary(x, cos, sin)
            assert_eager_formula(ours, eagers)
            assert_eager_formula(torch.autograd.grad(ours.sum(), x)[0], torch.autograd.grad(eagers.sum(), x)[0])
            a, b = torch.randn(n, 1, device=device).abs(), torch.randn(1, 4, device=device)
            h, f = torch.randn(n, 4, device=device).half(), torch.randn(2, 4, device=device)
            assert_bitwise(compiled_placing(a, b, h, f), placing(a, b, h, f))
    inlined = [{d.node: d.kernel for d in r.decisions if "computed where" in d.kernel} for r in reports]

    def where(report, labels):  # {(op, kernel, readers' ops)}: node names differ with the sizes' symbols
        op_of = {d.node: d.op.removeprefix("aten.").split(".")[0] for d in report.decisions}
        return {(op_of[node], label.split()[0], tuple(op_of[r] for r in re.search(r"where (.+) reads? it", label).group(1).split(", ")))
                for node, label in labels.items()}

    rotary_forward, rotary_backward, placed = (where(r, labels) for r, labels in zip(reports, inlined, strict=True))
    assert rotary_forward == {("neg", "kernel_0", ("cat",))}, inlined[0]
    assert rotary_backward == {("mul", "kernel_0", ("neg", "slice_scatter")), ("neg", "kernel_0", ("slice_scatter",)),
                               ("full", "kernel_0", ("slice_scatter", "slice_scatter"))}, inlined[1]  # the zeros: a fill
    assert placed == {("add", "kernel_0", ("constant_pad_nd",)), ("mul", "kernel_1", ("cat",)), ("mul", "kernel_2", ("flip",)),
                      ("mul", "kernel_3", ("sub",)), ("sub", "kernel_3", ("repeat",)),  # a chain of producers
                      ("reciprocal", "kernel_4", ("mul",)), ("mul", "kernel_4", ("constant_pad_nd",)),
                      ("sub", "kernel_5", ("cat",))}, inlined[2]  # through a slice of a slice
    assert [len({d.kernel.split()[0] for d in r.decisions if d.kernel}) for r in reports] == [1, 1, 6]
    assert reports[0].kernels[0].count("tl.store") == 1
    for kernel in reports[2].kernels:  # the masked read's where is folded into the op's own pick
        picks = dict(re.findall(r"^\s*(tmp\d+) = \(?tl\.where\((tmp\d+),", kernel, re.M))
        nested = re.findall(r"tl\.where\((tmp\d+), (tmp\d+),", kernel)
        assert not [(c, v) for c, v in nested if picks.get(v) == c], kernel
    for r, names in zip(reports, inlined):
        rows = {row[1]: row[3] for row in r.rows()}
        assert all(rows[node] == "kernel" for node in names), rows  # not "dead, removed"


PLACED_IN_PLACING = {
    # llama's keys: rotate_half's cat read by a product the KV cache's cat computes where it reads it
    "rotary key into a cache": lambda k, past, cos, sin: torch.cat([past, rotary_embedding(k, cos, sin)], dim=-2),
    "pad of a cat": lambda k, past, cos, sin: F.pad(torch.cat([k, past * 2], dim=-2), (1, 2), value=-3.0),
    "cat of a flip of a pad": lambda k, past, cos, sin: torch.cat([F.pad(k, (0, 0, 1, 1)).flip(-1) * cos[0], past], dim=-2),
}


@pytest.mark.parametrize("fn", PLACED_IN_PLACING.values(), ids=PLACED_IN_PLACING.keys())
def test_a_placing_op_read_where_another_gathers_it_is_computed_there(device: str, fn) -> None:
    """A placing op (cat, pad, flip, ...) that only placing ops read, directly or through
    inlined producers, is computed where they read it, at their coordinates: its own
    conditions and loads there, under the reader's mask (lanes outside the reader's input
    load nothing). llama's key rotary and its KV cache's cat were two kernels, the first
    storing rotate_half(k). One kernel each, forward bitwise eager's formula, two sizes."""
    compiled = torch.compile(fn, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 5):
            k, past = torch.randn(2, 4, n, 8, device=device), torch.randn(2, 4, 2, 8, device=device)
            cos, sin = torch.randn(n, 8, device=device), torch.randn(n, 8, device=device)
            assert_eager_formula(compiled(k, past, cos, sin), fn(k, past, cos, sin))
    assert xpu_lite.counters.forward_graphs == 1 and xpu_lite.counters.fallback_nodes == 0
    assert len({d.kernel.split()[0] for d in reports[0].decisions if d.kernel}) == 1, reports[0].decisions
    assert reports[0].kernels[0].count("tl.store") == 1


def test_a_placing_op_two_kernels_read_is_computed_in_both_and_explain_names_both() -> None:
    """A pad that a max pool and a flip (read by an avg pool) read: computed in each of the
    two kernels, never stored; explain names both kernels and their readers. Bitwise
    eager's, values and indices, float32 and bfloat16."""
    def f(x, y):
        p = F.pad(torch.cat([x, y * 2], dim=-1), (1, 2, 2, 1), value=-0.5)
        return (*F.max_pool2d(p, 3, 2, 1, return_indices=True), F.avg_pool2d(p.flip(-2), 3, 1, 1))

    compiled = torch.compile(f, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for dtype, n in ((torch.float32, 5), (torch.bfloat16, 8)):
            x, y = torch.randn(2, 3, n, 6).to(dtype), torch.randn(2, 3, n, 4).to(dtype)
            assert_bitwise(compiled(x, y), f(x, y))
    pad = next(d.kernel for d in reports[0].decisions if d.op == "aten.constant_pad_nd.default")
    assert re.fullmatch(r"kernel_0 \(computed where max_pool2d_with_indices reads it: not stored\); "
                        r"kernel_1 \(computed where flip reads it: not stored\)", pad), pad
    assert not any("torch.ops.aten" in r.source for r in reports), [r.source for r in reports]


def test_a_fill_is_computed_where_it_is_read_never_stored(device: str) -> None:
    """A fill (`full`: the same value at every coordinate, nothing loaded) that pointwise
    and placing ops read is computed in each reader's kernel and never stored
    (inlining._of_inputs). In training, `hidden[:, -k:]` (a causal LM's logits_to_keep) has
    slice_backward's zeros as the base of two slice_scatters, one inlined into the other:
    the zeros were a kernel of their own, stored and loaded back, an activation's size in
    every training step. A transposing kernel reading a fill stays tiled; where an eager
    op or a scatter reads the fill it is stored, as they read memory."""
    def keep_last(h, w, W):
        return ((h * w)[:, -3:] @ W).sum()

    def transposed(x):
        return x.t().contiguous() * 2 + torch.full((x.shape[1], x.shape[0]), 0.5, device=x.device)

    def read_by_eager_and_scatter(x, W, index):
        z = torch.zeros(x.shape[0], 4, device=x.device)
        return z + x[:, :4], z @ W, torch.zeros(x.shape[0], device=x.device).index_add(0, index, x[:, 0])

    compiled = [torch.compile(f, backend="xpu_lite", dynamic=True) for f in (keep_last, transposed, read_by_eager_and_scatter)]
    with capture() as reports:
        for n in (5, 7):
            h, w = torch.randn(2, n, 8, device=device, requires_grad=True), torch.randn(8, device=device, requires_grad=True)
            W = torch.randn(8, 3, device=device)
            ours, eagers = (torch.autograd.grad(f(h, w, W), (h, w)) for f in (compiled[0], keep_last))
            torch.testing.assert_close(ours, eagers, rtol=1e-5, atol=1e-6)  # w's gradient sums in another order
            x = torch.randn(n, 6, device=device)
            assert_bitwise(compiled[1](x), transposed(x))
            index = torch.tensor([n - 1, 0, 1] * 2 + [0] * (n - 6), device=device)[:n]
            assert_bitwise(compiled[2](x, torch.randn(4, 2, device=device), index)[0::2],
                           read_by_eager_and_scatter(x, torch.randn(4, 2, device=device), index)[0::2])
    fills = {r.name: [d.kernel for d in r.decisions if d.op == "aten.full.default"] for r in reports}
    backward = next(r for r in reports if r.kind == "backward")
    assert fills[backward.name] and all("not stored" in k for k in fills[backward.name]), fills
    assert backward.source.count("torch.empty_strided") == 2, backward.source  # the two gradients, no zeros
    transposing, eager_read = next(r for r in reports if r.kind == "inference"), reports[-1]
    assert any("tiled" in d.kernel for d in transposing.decisions), [d.kernel for d in transposing.decisions]
    assert fills[transposing.name] and all("not stored" in k for k in fills[transposing.name]), fills
    assert len(fills[eager_read.name]) == 2 and not any("not stored" in k for k in fills[eager_read.name]), fills


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
def test_a_placing_op_moves_an_inlined_half_value_unrounded_unless_it_promotes(device: str, dtype: torch.dtype) -> None:
    """A half producer computed where a placing op reads it is rounded as a fused value is:
    where it leaves its dtype (cat promoting it to float32), not where the placing op keeps
    it (pad, flip): there `pad(a * b) * c` inside the pad is `a * b * c` computed in one
    kernel, bit for bit (the value was rounded before 2026-11-26)."""
    def padded(a, b, c, wide):
        return F.pad(a * b, (1, 1)) * wide, (a * b).flip(-1) * c.flip(-1)

    def fused(a, b, c):
        return a * b * c

    def promoted(a, b, f):
        return torch.cat([a * b, f], dim=0)

    compiled_padded, compiled_fused, compiled_promoted = (torch.compile(f, backend="xpu_lite", dynamic=True)
                                                          for f in (padded, fused, promoted))
    for n in (5, 8):
        a, b, c = (torch.randn(3, n, device=device).to(dtype) for _ in range(3))
        (pad, flip), plain = compiled_padded(a, b, c, F.pad(c, (1, 1))), compiled_fused(a, b, c)
        assert torch.equal(pad[:, 1:-1], plain) and torch.equal(flip.flip(-1), plain)
        f = torch.randn(2, n, device=device)
        assert_bitwise(compiled_promoted(a, b, f), promoted(a, b, f))  # a * b rounded, as its tensor holds it


def test_a_producer_is_not_computed_where_its_inputs_are_not_in_memory_yet() -> None:
    """A producer is computed where it is gathered only if what it reads is in memory then:
    not when a write to its input comes between (the reader would see the new values), and
    (fusion._loaded_roots) not when the reader's kernel computes that input itself."""
    from torch.fx.experimental.proxy_tensor import make_fx

    from xpu_lite.config import parse_config
    from xpu_lite.decomp import build_plan
    from xpu_lite.lowering import partition
    from xpu_lite.lowering.inlining import inlined_producers

    def written_between(x, y):
        n = x.neg()
        x.copy_(y)
        return torch.cat([n, y])

    def written_after(x, y):
        n = x.neg()
        return torch.cat([n, y]), x.copy_(y)

    found = {}
    for fn in (written_between, written_after):
        gm = make_fx(fn, tracing_mode="fake")(torch.randn(3), torch.randn(3))
        found[fn.__name__] = [n.name for n in inlined_producers(gm, partition(gm, build_plan(parse_config(None, {})), "cpu"))]
    assert found == {"written_between": [], "written_after": ["neg"]}

    def computed_in_the_run(x):
        z = x * 2
        return F.pad(z.neg(), (1, -1)) + z  # the pad's space is z's

    compiled = torch.compile(computed_in_the_run, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (3, 4):
            x = torch.randn(n, 3)
            assert_bitwise(compiled(x), computed_in_the_run(x))
    kernels = {d.node: d.kernel.split()[0] for d in reports[0].decisions if d.kernel}
    assert kernels["mul"] != kernels["constant_pad_nd"] == kernels["neg"], kernels  # z stored by a kernel before the pad's
