"""How tools/opinfo_sweep.py's --layout lays out each run's copy of an input tensor: the
sample's own layout, or one that kernels must read through strides (dims reversed in
memory, channels-last, every other element of a buffer)."""
from __future__ import annotations

import torch


def permuted(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` with its dims reversed in memory (dense, not contiguous from rank 2)."""
    reverse = list(reversed(range(t.dim())))
    return t.permute(reverse).clone(memory_format=torch.contiguous_format).permute(reverse)


def channels_last(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t`, channels-last if it has 4 dims (channels_last_3d if 5), as a
    convolutional network's activations are; other ranks as they are."""
    formats = {4: torch.channels_last, 5: torch.channels_last_3d}
    return t.clone(memory_format=formats.get(t.dim(), torch.preserve_format))


def strided(t: torch.Tensor) -> torch.Tensor:
    """A copy of `t` as a view of every other element of a buffer whose elements between are
    NaN (12 for integers), so a kernel that reads the wrong ones shows."""
    from torch.testing._internal.common_utils import noncontiguous_like

    return noncontiguous_like(t.contiguous())  # always a new buffer


# --layout: an input's copy for a run, with its values ("sample": the sample's own layout,
# where dense; OpInfo makes some inputs transposed or expanded)
LAYOUTS = {"sample": torch.Tensor.clone, "strided": strided, "permuted": permuted, "channels_last": channels_last}
