"""Lite mode over every OpInfo op: outside regions every aten op runs as the eager kernel, so
the compiled result must be bitwise equal to eager (values, NaNs, shape, dtype, strides) on
the first call already, with dynamic sizes, and no kernel is compiled. One sample per op
(the first of `sample_inputs`), float32, cpu: ~670 ops in about four minutes. The check
is tools/opinfo_sweep.py's (which also records backend failures that Dynamo would turn
into a silent eager run); that tool sweeps deeper.
"""
from __future__ import annotations

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db

from tools.opinfo_sweep import check

OPS = [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]


def _name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


@pytest.mark.parametrize("op", OPS, ids=_name)
def test_lite_mode_is_bitwise_equal_to_eager(op) -> None:
    sample = next(iter(op.sample_inputs("cpu", torch.float32)), None)
    if sample is None:
        pytest.skip("the OpInfo has no float32 sample on cpu")
    verdict = check(op, sample, mode="lite")
    if verdict is not None and verdict.startswith("skip"):
        pytest.skip(verdict)  # eager itself raises, or Dynamo fails in every backend (aot_eager too)
    assert verdict is None, verdict
