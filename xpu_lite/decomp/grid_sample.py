"""grid_sampler_2d in regions: gathers of the input, with eager's float32 arithmetic.

torch._decomp's decomposition computes the scales of unnormalize and reflect from the
sizes as Python floats; with symbolic sizes those are float64 tensor ops in the graph
(eager calls, and Intel Arc has no float64). Here a size enters as an integer operand of a
float32 op, in eager's formulas (GridSampler.h / GridSampler.cuh):

    align_corners:     ((coord + 1) / 2) * (size - 1)
    not align_corners: ((coord + 1) * size - 1) / 2

reflection as reflect_coordinates (fmod by the span, the parity of the flips counted in
float), border and reflection clipped with NaN at 0 (the GPU kernels' fmax/fmin). Bounds
are checked on the float coordinates before they become positions. A pixel outside the
image: eager's GPU kernels skip it (a NaN or infinite coordinate gives 0 with zeros
padding), eager's cpu kernel multiplies the masked pixel by its weight (NaN there); each
device gets its eager's. Half inputs compute in float32 and round once (opmath). The
backward stays eager's grid_sampler_2d_backward.
"""
from __future__ import annotations

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


def _clip(coord: torch.Tensor, size: Any) -> torch.Tensor:
    """Between 0 and size - 1, a NaN at 0: eager's clip_coordinates, min(size - 1, max(x, 0))
    with the GPU's fmax/fmin (and the cpu kernels' vector max/min), which drop a NaN."""
    return coord.nan_to_num(0.0).clamp(0, size - 1)


def _pad(coord: torch.Tensor, size: Any, padding_mode: int, align_corners: bool) -> torch.Tensor:
    if padding_mode == _BORDER:
        return _clip(coord, size)
    if padding_mode == _REFLECTION:
        return _clip(_reflect(coord, size, align_corners), size)
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
    """aten.grid_sampler_2d as lookups of the input (see the module doc). Anything eager
    would reject (another mode, a grid whose last dim is not 2, a dtype other than float32,
    float16 and bfloat16) declines with NotImplemented: the op stays whole, and eager
    raises its own error."""
    if (interpolation_mode not in (_BILINEAR, _NEAREST, _BICUBIC) or padding_mode not in (_ZEROS, _BORDER, _REFLECTION)
            or input.dim() != 4 or grid.dim() != 4 or grid.shape[-1] != 2 or input.dtype != grid.dtype
            or input.dtype not in (torch.float32, torch.float16, torch.bfloat16)):
        return NotImplemented
    n, c, height, width = input.shape
    _, out_h, out_w, _ = grid.shape
    # Each output element reads input[b, ch, y, x] as a gather of the flattened image at
    # y * width + x. The grid is expanded over the channels, as torch._decomp's
    # _expand_grid does: every op below has the result's shape (n, c, out_h * out_w), so
    # the coordinates, the positions and the lookups are one kernel (a lookup reads an
    # index computed in its own kernel, fusion._loaded_roots).
    pixels = input.reshape(n, c, height * width)
    on_cpu = input.device.type == "cpu"
    grid = grid.float().reshape(n, 1, out_h * out_w, 2).expand(n, c, out_h * out_w, 2)

    def term(x: torch.Tensor, y: torch.Tensor, weight: torch.Tensor | None) -> torch.Tensor:
        """weight * input[b, ch, y, x] where (x, y) is inside the image, else 0; x and y
        hold whole numbers (or NaN/inf)."""
        inside = (x >= 0) & (x < width) & (y >= 0) & (y < height)
        position = torch.where(inside, y, 0).to(torch.int64) * width + torch.where(inside, x, 0).to(torch.int64)
        value = pixels.gather(2, position).float()
        if weight is None:
            return torch.where(inside, value, 0)
        if on_cpu:  # eager's cpu kernel multiplies a masked value by the weight: NaN where it is (a non-finite coordinate)
            return torch.where(inside, value, 0) * weight
        return torch.where(inside, value * weight, 0)  # eager's gpu kernels skip the term

    gx, gy = grid[..., 0], grid[..., 1]
    if interpolation_mode == _BICUBIC:  # padding applies to each of the 16 positions
        x, y = _unnormalize(gx, width, align_corners), _unnormalize(gy, height, align_corners)
        x0, y0 = x.floor(), y.floor()
        wx = _cubic_coefficients(x - x0)
        wy = _cubic_coefficients(y - y0)
        rows = []
        for i in range(4):
            py = _pad(y0 + (i - 1), height, padding_mode, align_corners)
            row = [term(_pad(x0 + (j - 1), width, padding_mode, align_corners), py, None) for j in range(4)]
            rows.append(_weighted_sum(row, wx))
        out = _weighted_sum(rows, wy)
    else:
        x = _pad(_unnormalize(gx, width, align_corners), width, padding_mode, align_corners)
        y = _pad(_unnormalize(gy, height, align_corners), height, padding_mode, align_corners)
        if interpolation_mode == _NEAREST:
            out = term(x.round(), y.round(), None)  # round half to even, eager's nearbyint
        else:
            x0, y0 = x.floor(), y.floor()
            x1, y1 = x0 + 1, y0 + 1
            out = (term(x0, y0, (x1 - x) * (y1 - y)) + term(x1, y0, (x - x0) * (y1 - y))
                   + term(x0, y1, (x1 - x) * (y - y0)) + term(x1, y1, (x - x0) * (y - y0)))
    return out.to(input.dtype).view(n, c, out_h, out_w)


def _weighted_sum(values: list[torch.Tensor], weights: list[torch.Tensor]) -> torch.Tensor:
    out = values[0] * weights[0]
    for value, weight in zip(values[1:], weights[1:], strict=True):
        out = out + value * weight
    return out


def cudnn_grid_sampler(input: torch.Tensor, grid: torch.Tensor) -> Any:
    """cuDNN's grid sampler (what `F.grid_sample` runs on cuda for bilinear, zeros padding,
    align_corners=True): the same lookups, so the region's graph is the same on every device."""
    return grid_sampler_2d(input, grid, _BILINEAR, _ZEROS, True)
