"""bucketize and searchsorted in regions: a binary search whose steps are lookups.

Each step looks the boundaries up at positions the same kernel computes (read in
registers), so the whole search is one kernel. The steps are eager's cpu loop
(Bucketization.cpp cus_lower_bound / cus_upper_bound) run for every element at once, as
torch._refs.bucketize runs it: `mid = start + (end - start) // 2`, then `start = mid + 1`
where `!(boundaries[mid] >= value)` (`>` for the right side), else `end = mid`. The same
positions are compared in the same order, so the result is eager's for any boundaries,
sorted or not, NaN included.

Values and boundaries are compared in their common dtype (torch.result_type: a 0-dim
value or a Python number does not widen the boundaries, as in eager). The number of steps
is the bit length of the boundaries' length: the graph guards on that bit length (one
graph for lengths 4-7, another for 8-15, ...), not on the length itself.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from .. import _torch_compat as compat

aten = torch.ops.aten

# The dtypes kernels compute (lowering/pointwise.py NUMERIC; decomp cannot import lowering,
# which imports decomp). Others keep the op whole: one eager call rather than a search of
# eager calls (or eager's error for bool, complex). scatters.py's scatter_reduce uses it too.
KERNEL_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.int32, torch.int64)


def _steps(length: Any) -> int:
    """The bit length of `length` >= 1, guarded bit by bit (a symbolic size is not specialized)."""
    steps = 1
    while length >= 2 ** steps:
        steps += 1
    return steps


def _search(values: torch.Tensor, look_up: Callable[[torch.Tensor], torch.Tensor], length: Any, right: bool,
            out_int32: bool) -> torch.Tensor:
    """Per element of `values`, the first position whose boundary is >= it (> it with
    `right`), `look_up(positions)` giving the boundaries at positions of values' shape."""
    start = torch.zeros(values.shape, dtype=torch.int64, device=values.device)
    end = start + length
    done = torch.zeros(values.shape, dtype=torch.bool, device=values.device)
    for _ in range(_steps(length)):
        mid = torch.where(done, 0, start + (end - start) // 2)  # a position in bounds when done
        boundary = look_up(mid)
        above = boundary > values if right else boundary >= values
        start = torch.where(done | above, start, mid + 1)
        end = torch.where(~done & above, mid, end)
        done = start >= end
    return start.to(torch.int32 if out_int32 else torch.int64).contiguous()  # eager's result is contiguous


def _common(boundaries: torch.Tensor, values: Any) -> torch.dtype | None:
    dtype = torch.result_type(boundaries, values)
    return dtype if dtype in KERNEL_DTYPES else None


def bucketize(self: Any, boundaries: torch.Tensor, *, out_int32: bool = False, right: bool = False) -> Any:
    """bucketize (also its Scalar overload) as the search of `boundaries`, which must be
    1-D (others decline: eager's check raises, where searchsorted would search rows)."""
    if boundaries.dim() != 1:
        return NotImplemented
    return searchsorted(boundaries, self, out_int32=out_int32, right=right)


def searchsorted(sorted_sequence: torch.Tensor, self: Any, *, out_int32: bool = False, right: bool = False,
                 side: str | None = None, sorter: torch.Tensor | None = None) -> Any:
    """searchsorted (also its Scalar overload) as the search of each row of
    `sorted_sequence`: a 1-D one is indexed at the positions (any values' shape), an N-D
    one gathered along its last dim (its leading dims are the values'), through `sorter`
    where given (eager reads `boundaries[sorter[mid]]` within the row). Arguments eager
    rejects, and dtypes kernels do not compare, decline: the op's own checks raise."""
    dtype = _common(sorted_sequence, self)
    if (dtype is None or sorted_sequence.dim() == 0 or (side == "left" and right) or side not in (None, "left", "right")
            or (sorter is not None and (sorter.shape != sorted_sequence.shape or sorter.dtype != torch.int64))):
        return NotImplemented
    if not isinstance(self, torch.Tensor):
        self = torch.scalar_tensor(self, dtype=dtype, device=sorted_sequence.device)
    if sorted_sequence.dim() > 1 and sorted_sequence.shape[:-1] != self.shape[:-1]:
        return NotImplemented
    length = sorted_sequence.shape[-1]
    if length == 0 or compat.statically_known_true(self.numel() == 0):  # eager's zeros, or nothing to search
        return torch.zeros(self.shape, dtype=torch.int32 if out_int32 else torch.int64, device=self.device)
    if sorted_sequence.dim() == 1:
        def at(table: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            return aten.index.Tensor(table, [positions])
    else:
        def at(table: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
            return aten.gather.default(table, -1, positions)

    def look_up(positions: torch.Tensor) -> torch.Tensor:
        return at(sorted_sequence, positions if sorter is None else at(sorter, positions)).to(dtype)

    right = right or side == "right"
    if self.dim() == 0:  # searched as one element: kernels place no 0-dim lookup
        return _search(self.to(dtype).reshape(1), look_up, length, right, out_int32).reshape(())
    return _search(self.to(dtype), look_up, length, right, out_int32)
