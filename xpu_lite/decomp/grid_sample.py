"""grid_sampler_2d/3d in regions: gathers of the input, with eager's float32 arithmetic.

torch._decomp's decomposition (2-D only) computes the scales of unnormalize and reflect
from the sizes as Python floats; with symbolic sizes those are float64 tensor ops in the
graph (eager calls, and Intel Arc has no float64). Here a size enters as an integer
operand of a float32 op, in eager's formulas (GridSampler.h / GridSampler.cuh):

    align_corners:     ((coord + 1) / 2) * (size - 1)
    not align_corners: ((coord + 1) * size - 1) / 2

reflection as reflect_coordinates (fmod by the span, the parity of the flips counted in
float), border and reflection clipped as the device's eager clips a NaN (_clip: cuda and
the cpu 2-D kernel to 0, xpu and the cpu 3-D kernel to size - 1). Bounds
are checked on the float coordinates before they become positions. A pixel outside the
image: eager's GPU kernels and its scalar cpu 3-D kernel skip it (a NaN or infinite
coordinate gives 0 with zeros padding), its vectorized cpu 2-D kernel multiplies the
masked pixel by its weight (NaN there); each device gets its eager's. Half inputs compute
in float32 and round once (opmath). The backward stays eager's grid_sampler_*_backward.
"""
from __future__ import annotations

import functools
import itertools
import math
import operator
from typing import Any

import torch

aten = torch.ops.aten

_BILINEAR, _NEAREST, _BICUBIC = 0, 1, 2
_ZEROS, _BORDER, _REFLECTION = 0, 1, 2
_CUBIC_A = -0.75  # eager's bicubic constant (UpSample.h)


def _unnormalize(coord: torch.Tensor, size: Any, align_corners: bool) -> torch.Tensor:
    if align_corners:
        return (coord + 1) / 2 * (size - 1)
    return ((coord + 1) * size - 1) / 2


def _reflect(coord: torch.Tensor, size: Any, align_corners: bool) -> torch.Tensor:
    """Reflected between -0.5 and size - 0.5 (0 and size - 1 with align_corners), as
    GridSampler.h's reflect_coordinates: the parity of the flips in float, exactly."""
    low, span = (0.0, size - 1) if align_corners else (-0.5, size)
    if align_corners and size == 1:  # a size-1 dim has one position (the guard Dynamo makes anyway)
        return torch.zeros_like(coord)
    distance = (coord - low).abs()
    extra = torch.fmod(distance, span)
    even = torch.fmod((distance / span).floor(), 2) == 0
    return torch.where(even, extra + low, (-extra + span) + low)


def _clip(coord: torch.Tensor, size: Any, nan_high: bool) -> torch.Tensor:
    """Between 0 and size - 1: eager's clip_coordinates, min(size - 1, max(x, 0)). A NaN goes
    to 0 with cuda's fmax/fmin and the cpu 2-D kernel's vector max/min, to size - 1 with
    std::max/std::min (`nan_high`: the cpu 3-D kernel, xpu's kernels)."""
    return coord.nan_to_num(float("inf") if nan_high else 0.0).clamp(0, size - 1)


def _pad(coord: torch.Tensor, size: Any, padding_mode: int, align_corners: bool, nan_high: bool = False) -> torch.Tensor:
    if padding_mode == _BORDER:
        return _clip(coord, size, nan_high)
    if padding_mode == _REFLECTION:
        return _clip(_reflect(coord, size, align_corners), size, nan_high)
    return coord


def _cubic_coefficients(t: torch.Tensor) -> list[torch.Tensor]:
    """UpSample.h's get_cubic_upsample_coefficients for the offset t in [0, 1)."""
    def near(x: torch.Tensor) -> torch.Tensor:  # cubic_convolution1, |x| <= 1
        return ((_CUBIC_A + 2) * x - (_CUBIC_A + 3)) * x * x + 1

    def far(x: torch.Tensor) -> torch.Tensor:  # cubic_convolution2, 1 < |x| < 2
        return ((_CUBIC_A * x - 5 * _CUBIC_A) * x + 8 * _CUBIC_A) * x - 4 * _CUBIC_A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sampler_2d(input: torch.Tensor, grid: torch.Tensor, interpolation_mode: int = 0, padding_mode: int = 0,
                    align_corners: bool = False) -> Any:
    """aten.grid_sampler_2d as gathers of the input (see the module doc)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 2)


def grid_sampler_3d(input: torch.Tensor, grid: torch.Tensor, interpolation_mode: int = 0, padding_mode: int = 0,
                    align_corners: bool = False) -> Any:
    """aten.grid_sampler_3d likewise: bilinear is trilinear (8 pixels), no bicubic (eager
    has none)."""
    return _grid_sampler(input, grid, interpolation_mode, padding_mode, align_corners, 3)


def _grid_sampler(input: torch.Tensor, grid: torch.Tensor, interpolation_mode: int, padding_mode: int,
                  align_corners: bool, dims: int) -> Any:
    """Anything eager would reject (another mode, a grid whose last dim is not `dims`, a
    dtype other than float32, float16 and bfloat16) declines with NotImplemented: the op
    stays whole, and eager raises its own error."""
    modes = (_BILINEAR, _NEAREST, _BICUBIC) if dims == 2 else (_BILINEAR, _NEAREST)
    if (interpolation_mode not in modes or padding_mode not in (_ZEROS, _BORDER, _REFLECTION)
            or input.dim() != dims + 2 or grid.dim() != dims + 2 or grid.shape[-1] != dims or input.dtype != grid.dtype
            or input.dtype not in (torch.float32, torch.float16, torch.bfloat16)):
        return NotImplemented
    n, c, *spatial = input.shape
    out_shape = list(grid.shape[1:-1])
    length = math.prod(out_shape)
    # Each output element reads input[b, ch, (z,) y, x] as a gather of the flattened image
    # at ((z * height) + y) * width + x. The grid is expanded over the channels, as
    # torch._decomp's _expand_grid does: every op below has the result's shape (n, c,
    # length), so the coordinates, the positions and the lookups are one kernel (a lookup
    # reads an index computed in its own kernel, fusion._loaded_roots).
    pixels = input.reshape(n, c, math.prod(spatial))
    grid = grid.float().reshape(n, 1, length, dims).expand(n, c, length, dims)
    sizes = spatial[::-1]  # the grid's order: x (width), y (height)(, z (depth))
    on_cpu = input.device.type == "cpu"
    # clip_coordinates with std::min/std::max (a NaN to size - 1): eager's scalar cpu 3-D
    # kernel, and xpu's kernels (torch-xpu-ops calls ATen's GridSampler.h); cuda's own
    # ::min/::max and the cpu 2-D kernel's vector min/max take a NaN to 0
    nan_high = input.device.type == "xpu" or (on_cpu and dims == 3)

    def term(points: list[torch.Tensor], weight: torch.Tensor | None) -> torch.Tensor:
        """weight * input at `points` (x, y(, z): whole numbers, or NaN/inf) where inside
        the image, else 0."""
        inside = functools.reduce(operator.and_, [(p >= 0) & (p < size) for p, size in zip(points, sizes)])
        position, stride = None, None  # x's stride is 1, y's width(, z's height * width)
        for p, size in zip(points, sizes):
            offset = torch.where(inside, p, 0).to(torch.int64)
            position = offset if position is None else position + offset * stride
            stride = size if stride is None else stride * size
        value = pixels.gather(2, position).float()
        if weight is None:
            return torch.where(inside, value, 0)
        if on_cpu and dims == 2:  # eager's vectorized cpu kernel multiplies a masked value by the weight: NaN where it is
            return torch.where(inside, value, 0) * weight
        return torch.where(inside, value * weight, 0)  # the other kernels skip the pixel

    coords = [grid[..., d] for d in range(dims)]
    if interpolation_mode == _BICUBIC:  # padding applies to each of the 16 positions
        (x, y), (width, height) = [_unnormalize(g, size, align_corners) for g, size in zip(coords, sizes)], sizes
        x0, y0 = x.floor(), y.floor()
        wx = _cubic_coefficients(x - x0)
        wy = _cubic_coefficients(y - y0)
        rows = []
        for i in range(4):
            py = _pad(y0 + (i - 1), height, padding_mode, align_corners)
            row = [term([_pad(x0 + (j - 1), width, padding_mode, align_corners), py], None) for j in range(4)]
            rows.append(_weighted_sum(row, wx))
        out = _weighted_sum(rows, wy)
    else:
        points = [_pad(_unnormalize(g, size, align_corners), size, padding_mode, align_corners, nan_high)
                  for g, size in zip(coords, sizes)]
        if interpolation_mode == _NEAREST:
            out = term([p.round() for p in points], None)  # round half to even, eager's nearbyint
        else:  # eager's corners: z, then y, then x, x fastest; weights multiplied x first
            lows = [p.floor() for p in points]
            terms = []
            for corner in itertools.product((0, 1), repeat=dims):
                sides = corner[::-1]  # per grid dim, x first
                at = [low + 1 if side else low for low, side in zip(lows, sides)]
                weight = functools.reduce(operator.mul, [(p - low) if side else (low + 1 - p)
                                                         for p, low, side in zip(points, lows, sides)])
                terms.append(term(at, weight))
            out = functools.reduce(operator.add, terms)
    return out.to(input.dtype).view(n, c, *out_shape)


def _weighted_sum(values: list[torch.Tensor], weights: list[torch.Tensor]) -> torch.Tensor:
    out = values[0] * weights[0]
    for value, weight in zip(values[1:], weights[1:], strict=True):
        out = out + value * weight
    return out


def cudnn_grid_sampler(input: torch.Tensor, grid: torch.Tensor) -> Any:
    """cuDNN's grid sampler (what `F.grid_sample` runs on cuda for bilinear, zeros padding,
    align_corners=True): the same lookups, so the region's graph is the same on every device."""
    return grid_sampler_2d(input, grid, _BILINEAR, _ZEROS, True)
