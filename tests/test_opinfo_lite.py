"""Lite mode over every OpInfo op: outside regions every aten op runs as the eager kernel, so
the compiled result must be bitwise equal to eager (values, NaNs, shape, dtype, strides) on
the first call already, with dynamic sizes. One sample per op (the first of
`sample_inputs`), float32, cpu: ~670 ops in about four minutes. Deeper sweeps:
tools/opinfo_sweep.py.
"""
from __future__ import annotations

import warnings

import pytest
import torch
from torch.testing._internal.common_methods_invocations import op_db
from torch.utils._pytree import tree_flatten

from xpu_lite.backend import xpu_lite_backend
from xpu_lite.report import capture

# Their values are whatever memory held: only the metadata can be compared.
UNINITIALIZED = {"empty", "empty_like", "empty_strided", "empty_permuted", "new_empty", "new_empty_strided"}
OPS = [op for op in op_db if torch.float32 in op.supported_dtypes("cpu")]


def _name(op) -> str:
    return op.name + (f".{op.variant_test_name}" if op.variant_test_name else "")


def _assert_same(actual, expected, values: bool) -> None:
    flat_a, spec_a = tree_flatten(actual)
    flat_e, spec_e = tree_flatten(expected)
    assert spec_a == spec_e, (spec_a, spec_e)
    for a, e in zip(flat_a, flat_e):
        if not isinstance(e, torch.Tensor):
            assert a == e or (a != a and e != e), (a, e)  # a NaN scalar equals a NaN scalar here
            continue
        assert isinstance(a, torch.Tensor), type(a)
        assert (a.shape, a.dtype, a.device) == (e.shape, e.dtype, e.device)
        if e.numel() > 1:
            assert a.stride() == e.stride(), (a.stride(), e.stride())
        if values:
            torch.testing.assert_close(a, e, rtol=0, atol=0, equal_nan=True)


def _aot_eager_works(fn, sample) -> bool:
    torch._dynamo.reset()
    try:
        torch.compile(fn, backend="aot_eager", dynamic=True)(sample.input, *sample.args)
    except Exception:  # noqa: BLE001
        return False
    return True


@pytest.mark.parametrize("op", OPS, ids=_name)
def test_lite_mode_is_bitwise_equal_to_eager(op) -> None:
    try:
        sample = next(iter(op.sample_inputs("cpu", torch.float32)))
    except StopIteration:
        pytest.skip("the OpInfo has no float32 sample on cpu")

    def fn(x, *args):
        return op.op(x, *args, **sample.kwargs)

    torch.manual_seed(0)  # random ops fall back to eager and must draw the same numbers
    try:
        expected = fn(sample.input, *sample.args)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"eager itself raises on the first sample: {type(exc).__name__}")
    failures: list[BaseException] = []

    def backend(gm, example_inputs):
        # Dynamo turns some backend errors into a graph break and runs the graph eagerly,
        # which would pass this comparison: record them.
        try:
            return xpu_lite_backend(gm, example_inputs, mode="lite")
        except torch._dynamo.exc.TorchDynamoException:
            raise  # restart analysis: Dynamo's control flow
        except Exception as exc:
            failures.append(exc)
            raise

    compiled = torch.compile(fn, backend=backend, dynamic=True)
    torch.manual_seed(0)
    with warnings.catch_warnings(), capture() as reports:
        warnings.simplefilter("ignore")  # deprecation notes of some ops; backend failures are recorded above
        try:
            actual = compiled(sample.input, *sample.args)
        except Exception as exc:
            if failures or _aot_eager_works(fn, sample):
                raise
            pytest.skip(f"Dynamo fails before any backend runs (aot_eager too): {type(exc).__name__}")
    assert not failures, f"xpu_lite failed to compile: {failures[0]!r}"
    _assert_same(actual, expected, values=op.name not in UNINITIALIZED)
    if reports:  # a graph that only returns its inputs is not compiled at all
        assert all(not r.kernels for r in reports), "lite mode without regions compiled a kernel"
