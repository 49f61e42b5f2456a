"""Shared test helpers: devices, eager comparison, fresh Dynamo state per test."""
from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator

os.environ.setdefault("PYTORCH_ENABLE_XPU_FALLBACK", "0")  # a silent CPU fallback on XPU must show up

import pytest
import torch

import xpu_lite
from xpu_lite.runtime import device_available

DEVICES = ("cpu", "cuda", "xpu")


def skip_unless(device: str):
    return pytest.mark.skipif(not device_available(device), reason=f"no {device} device on this machine")


@pytest.fixture(params=[pytest.param(d, marks=skip_unless(d)) for d in DEVICES])
def device(request: pytest.FixtureRequest) -> str:
    return request.param


@contextlib.contextmanager
def xpu_lite_log() -> Iterator[list[str]]:
    """The messages the `xpu_lite` logger emits at INFO and above inside the block; the
    logger's level and the root logger's handlers are as before afterwards."""
    lines: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    root, logger, handler = logging.getLogger(), logging.getLogger("xpu_lite"), Collect(logging.INFO)
    handlers, level = list(root.handlers), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        for added in [h for h in root.handlers if h not in handlers]:  # a logging.basicConfig() inside
            root.removeHandler(added)


@pytest.fixture(autouse=True)
def fresh_dynamo():
    torch._dynamo.reset()
    xpu_lite.reset_counters()
    yield
    torch._dynamo.reset()


def assert_bitwise(actual, expected) -> None:
    """Lite-mode fallbacks are eager calls: shape, dtype and every bit must match."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_bitwise(a, e)
        return
    assert isinstance(actual, torch.Tensor), type(actual)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual.shape, expected.shape)
    assert actual.device == expected.device
    assert torch.equal(actual, expected) or _same_bits(actual, expected), f"max abs diff {(actual.double() - expected.double()).abs().max()}"


_BITS = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def _same_bits(actual: torch.Tensor, expected: torch.Tensor) -> bool:
    """torch.equal is False wherever there is a NaN: compare the bit patterns (NaN payloads too)."""
    bits = _BITS.get(expected.dtype)
    if bits is None or actual.layout is not torch.strided:
        return False
    return torch.equal(actual.contiguous().view(bits), expected.contiguous().view(bits))
