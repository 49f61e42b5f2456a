"""grid_sample in regions (decomp/grid_sample.py): the coordinates, the positions, the
lookups of the four (bilinear; eight in 3-D), one (nearest) or sixteen (bicubic) pixels
and their weighted sum are one kernel for every input size, with eager's float32 arithmetic of the
sizes (no float64 op); the backward stays eager's `grid_sampler_2d_backward` (3-D's)."""
from __future__ import annotations

import itertools

import pytest
import torch
import torch.nn.functional as F

import xpu_lite
from xpu_lite.report import capture

from .conftest import assert_bitwise
from .test_kernels import LOW_PRECISION_TOL, _close, _closer_than_eager

MODES = ["bilinear", "nearest", "bicubic"]
PADDINGS = ["zeros", "border", "reflection"]
# every mode with every padding, align_corners alternating (both are run for each mode)
# SIZES: within one call no two sizes alike, none 2: Dynamo's duck sizing gives equal sizes
# one symbol, and the grid's last dim is 2 (a batch of 2 on the first call is pinned to the
# grid's 2 and recompiles for other batches, in every backend, aot_eager too)
CASES = [(m, p, (i + j) % 2 == 1) for (i, m), (j, p) in itertools.product(enumerate(MODES), enumerate(PADDINGS))]


def _sample(x, grid, mode, padding, align_corners):
    return F.grid_sample(x, grid, mode=mode, padding_mode=padding, align_corners=align_corners)


def _grid(n: int, out_h: int, out_w: int, device: str, special: bool = True) -> torch.Tensor:
    """Coordinates past the border on every side; with `special`, a NaN, infinities (eager
    clips them to the border, or gives 0 or NaN) and one reflected many times over (1e6; at
    1e30 eager's cpu and gpu kernels disagree: the cpu one subtracts a multiple of the span
    rounded in float32, the gpu one takes fmod, as the decomposition does)."""
    grid = torch.rand(n, out_h, out_w, 2, device=device) * 3.4 - 1.7
    if special:
        values = [(float("nan"), 0.2), (float("inf"), 0.1), (0.3, -float("inf")), (1e6, -0.5), (-1.0, 1.0)]
        for k, v in enumerate(values):
            grid[0, k // out_w, k % out_w] = torch.tensor(v)
    return grid


@pytest.mark.parametrize("mode,padding,align_corners", CASES, ids=[f"{m}-{p}-{'ac' if a else 'noac'}" for m, p, a in CASES])
def test_one_kernel_for_all_sizes(device: str, mode: str, padding: str, align_corners: bool) -> None:
    """One graph for three image and grid sizes, its only kernel the sampling: no eager call
    (torch's decomposition would compute the scales in float64 tensors) and nothing stored but
    the result. Close to eager (eager's cpu kernel computes the coordinates in another order:
    1-3 ulps), NaN where eager's is, with eager's strides."""
    compiled = torch.compile(_sample, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n, h, w, out_h, out_w in ((4, 5, 6, 7, 8), (5, 7, 4, 6, 9), (6, 4, 9, 5, 7)):  # see SIZES
            x, grid = torch.randn(n, 3, h, w, device=device), _grid(n, out_h, out_w, device)
            _close(compiled(x, grid, mode, padding, align_corners), _sample(x, grid, mode, padding, align_corners))
    assert xpu_lite.counters.forward_graphs == 1
    assert not reports[0].fallbacks, reports[0].rows()
    assert len(reports[0].kernels) == 1, reports[0].rows()


CASES_3D = [(m, p, (i + j) % 2 == 1) for (i, m), (j, p) in itertools.product(enumerate(MODES[:2]), enumerate(PADDINGS))]


@pytest.mark.parametrize("mode,padding,align_corners", CASES_3D, ids=[f"{m}-{p}-{'ac' if a else 'noac'}" for m, p, a in CASES_3D])
def test_volumes_one_kernel_for_all_sizes(device: str, mode: str, padding: str, align_corners: bool) -> None:
    """grid_sampler_3d (5-D input, bilinear = trilinear over 8 pixels, or nearest): one graph
    for two sizes, one kernel, no eager call. On cpu bitwise eager's, non-finite
    coordinates included: eager's 3-D cpu kernel is scalar code with the formulas the
    decomposition follows (its std::min clips a NaN to size - 1, the GPU's fmin to 0)."""
    compiled = torch.compile(_sample, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n, d, h, w, out_d, out_h, out_w in ((4, 5, 6, 7, 8, 9, 10), (5, 6, 7, 4, 9, 8, 10)):  # see SIZES
            x = torch.randn(n, 3, d, h, w, device=device)
            grid = torch.rand(n, out_d, out_h, out_w, 3, device=device) * 3.4 - 1.7
            special = [(float("nan"), 0.2, 0.1), (float("inf"), 0.1, 0.0), (0.3, -float("inf"), 0.2), (1e6, -0.5, 0.3),
                       (-1.0, 1.0, float("nan"))]
            for k, v in enumerate(special):
                grid[0, 0, 0, k] = torch.tensor(v)
            got, expected = compiled(x, grid, mode, padding, align_corners), _sample(x, grid, mode, padding, align_corners)
            if device == "cpu":
                assert_bitwise(got, expected, nan_payloads=False)
            else:
                _close(got, expected)
    assert xpu_lite.counters.forward_graphs == 1
    assert not reports[0].fallbacks, reports[0].rows()
    assert len(reports[0].kernels) == 1, reports[0].rows()


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=["float16", "bfloat16"])
@pytest.mark.parametrize("mode", MODES)
def test_half_precision_against_float64(device: str, mode: str, dtype: torch.dtype) -> None:
    """float16/bfloat16 compute in float32 and round once: no further from the float64
    result than twice eager's error plus a rounding step; the result keeps the dtype."""
    compiled = torch.compile(_sample, backend="xpu_lite", dynamic=True)
    for n in (4, 7):
        x, grid = torch.randn(n, 3, 5, 6, device=device).to(dtype), _grid(n, 8, 9, device, special=False).to(dtype)
        try:
            eager = _sample(x, grid, mode, "border", False)
        except RuntimeError as e:  # eager has no half kernel for this mode on this device
            pytest.skip(f"eager grid_sample {mode} in {dtype} on {device}: {e}")
        reference = _sample(x.double(), grid.double(), mode, "border", False)
        _closer_than_eager(compiled(x, grid, mode, "border", False), eager, reference, LOW_PRECISION_TOL[dtype])


def test_channels_last_input_and_gradients(device: str) -> None:
    """A channels-last image is read through its strides (the result is contiguous, as
    eager's); training: the forward is the kernel, the backward eager's
    grid_sampler_2d_backward on the same inputs, so the gradients are bitwise eager's. On
    cuda and xpu that kernel adds the input's gradient with atomics, in no fixed order (two
    eager runs can differ in the last bit): there the grid's gradient is bitwise, the input's close."""
    compiled = torch.compile(_sample, backend="xpu_lite", dynamic=True)
    with capture() as reports:
        for n in (4, 7):
            x = torch.randn(n, 3, 5, 6, device=device).to(memory_format=torch.channels_last)
            grid = _grid(n, 8, 9, device, special=False)
            ours, eager = [(x.clone().requires_grad_(), grid.clone().requires_grad_()) for _ in range(2)]
            got, expected = compiled(*ours, "bilinear", "zeros", False), _sample(*eager, "bilinear", "zeros", False)
            _close(got, expected)
            got.sum().backward()
            expected.sum().backward()
            assert_bitwise(ours[1].grad, eager[1].grad)
            if x.device.type == "cpu":
                assert_bitwise(ours[0].grad, eager[0].grad)
            else:
                _close(ours[0].grad, eager[0].grad)
    fallbacks = {d.op for r in reports for d in r.fallbacks}
    assert fallbacks == {"aten.grid_sampler_2d_backward.default"}, fallbacks


def test_cudnn_grid_sampler_decomposes_to_the_same_lookups() -> None:
    """On cuda, `F.grid_sample` with bilinear, zeros padding and align_corners=True runs
    cuDNN's sampler (the dispatcher picks it while tracing); regions decompose it as
    grid_sampler_2d with those arguments. Checked here through the policy's entry, on cpu
    tensors (cuDNN's op has no cpu kernel): eager's align_corners=True result."""
    from xpu_lite.decomp.policy import policy

    decompose, _ = policy()
    x, grid = torch.randn(2, 3, 5, 6), _grid(2, 4, 7, "cpu")
    _close(decompose[torch.ops.aten.cudnn_grid_sampler.default](x, grid), _sample(x, grid, "bilinear", "zeros", True))
