"""Shared test helpers: devices, eager comparison, fresh Dynamo state per test."""
from __future__ import annotations

import contextlib
import gc
import logging
import os
import random
from collections.abc import Iterator

os.environ.setdefault("PYTORCH_ENABLE_XPU_FALLBACK", "0")  # a silent CPU fallback on XPU must show up

import pytest
import torch

import xpu_lite
from xpu_lite import _torch_compat as compat
from xpu_lite.runtime import device_available

DEVICES = ("cpu", "cuda", "xpu")


def pytest_collection_finish(session: pytest.Session) -> None:
    """The tests collected (torch, triton, xpu_lite and OpInfo's database imported), their
    objects (over half a million) leave the garbage collector's generations (gc.freeze): a full
    collection, which a compile's allocations set off every other compile or so, then skips
    them, a fifth of a small compile's time. What the tests create is collected as usual.
    Unfrozen at the end, so that the interpreter's exit frees them as usual. Dynamo's guard
    timing, for its metrics only, is skipped for the session: a quarter of a small compile
    (compat.guard_latency_unmeasured); and OpInfo's sample iterators look for their unittest
    test without reading the source of every frame of pytest's stack (~30 ms a test,
    compat.opinfo_test_lookup_by_frames)."""
    gc.collect()
    gc.freeze()
    _SESSION.enter_context(compat.guard_latency_unmeasured())
    _SESSION.enter_context(compat.opinfo_test_lookup_by_frames())


def pytest_sessionfinish(session: pytest.Session) -> None:
    gc.unfreeze()
    _SESSION.close()


_SESSION = contextlib.ExitStack()  # what the session sets up, undone at its end


# files of tests that take 15-80 s each (tools and benchmarks end to end, compiles for cuda)
_SLOW_FILES = ("test_tools.py", "test_gpu_codegen.py", "test_demo.py", "test_flex_attention.py")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config, items: list[pytest.Item]) -> None:
    """The slowest files' tests first (otherwise in file order): the run then ends on short
    tests, each worker busy to the end (pytest-xdist's worksteal shares what is queued),
    where one of them ended alone on a test of a minute."""
    items.sort(key=lambda item: item.path.name not in _SLOW_FILES)


def low_precision_cases(opinfos: list[tuple[str, str]]) -> list:
    """(name, variant, dtype, where) for an OpInfo test in float16 and bfloat16: both dtypes in
    the default mode; in a lite-mode compile region, one per op, float16 and bfloat16 in turn
    down the list. A region selects and annotates nodes whatever their dtype, and its kernels
    are the default mode's, so the region's second dtype doubled compiles that found nothing
    the others did not (2026-12-03: ~120 worker-seconds of a suite at its 20-minute limit)."""
    cases = []
    for i, (name, variant) in enumerate(opinfos):
        op_id = f"{name}-{variant}" if variant else name
        for dtype, where in ((torch.float16, "default mode"), (torch.bfloat16, "default mode"),
                             ((torch.float16, torch.bfloat16)[i % 2], "lite region")):
            cases.append(pytest.param(name, variant, dtype, where, id=f"{op_id}-{str(dtype)[6:]}-{where}"))
    return cases


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


@contextlib.contextmanager
def one_rank(store: str) -> Iterator[None]:
    """A distributed run of one rank (torch's default backend for each device: gloo on
    cpu), its store the file `store`; destroyed after."""
    import torch.distributed as dist

    dist.init_process_group(store=dist.FileStore(store, 1), rank=0, world_size=1)
    try:
        yield
    finally:
        dist.destroy_process_group()


@pytest.fixture(autouse=True)
def fresh_dynamo():
    # every test's random data the same on every run (a failure reproduces; none is flaky)
    torch.manual_seed(0)
    random.seed(0)
    torch._dynamo.reset()
    xpu_lite.reset_counters()
    yield
    torch._dynamo.reset()


def assert_bitwise(actual, expected, nan_payloads: bool = True) -> None:
    """Lite-mode fallbacks are eager calls: shape, dtype and every bit must match.
    `nan_payloads=False`: NaNs where eager's, their payloads aside (eager's vectorized cpu
    casts to float16/bfloat16 write 0x7FFF/0xFFFF where a kernel keeps the quiet NaN)."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_bitwise(a, e, nan_payloads)
        return
    assert isinstance(actual, torch.Tensor), type(actual)
    assert actual.shape == expected.shape and actual.dtype == expected.dtype, (actual.shape, expected.shape)
    assert actual.device == expected.device
    assert torch.equal(actual, expected) or _same_bits(actual, expected, nan_payloads), _first_difference(actual, expected)


_BITS = {torch.float64: torch.int64, torch.float32: torch.int32, torch.float16: torch.int16, torch.bfloat16: torch.int16}


def _same_bits(actual: torch.Tensor, expected: torch.Tensor, nan_payloads: bool = True) -> bool:
    """torch.equal is False wherever there is a NaN: compare the bit patterns (NaN payloads
    too; on a gpu not those of float16/bfloat16 NaNs, docs/kernels.md "Devices": a kernel's
    conversion from float32 gives the canonical NaN, where eager's max pool keeps the
    input's)."""
    bits = _BITS.get(expected.dtype)
    if bits is None or actual.layout is not torch.strided:
        return False
    if not nan_payloads or (actual.device.type != "cpu" and expected.dtype in (torch.float16, torch.bfloat16)):
        nans = expected.isnan()
        if not torch.equal(actual.isnan(), nans):
            return False
        actual, expected = actual.masked_fill(nans, 0), expected.masked_fill(nans, 0)
    return torch.equal(actual.contiguous().view(bits), expected.contiguous().view(bits))


def assert_eager_formula(actual, expected, ulps: int = 4) -> None:
    """A kernel that computes as eager's kernel computes: bitwise on cpu (the interpreter
    rounds as eager's cpu kernels do); on a gpu within `ulps` units in the last place,
    docs/kernels.md "Devices": eager's cuda kernels have formulas of their own (pool backward
    divides per window, interpolation weights), and nvcc and Triton contract multiply-adds
    into FMAs in different places."""
    if isinstance(expected, (tuple, list)):
        assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
        for a, e in zip(actual, expected):
            assert_eager_formula(a, e, ulps)
        return
    if expected.device.type == "cpu" or not expected.is_floating_point():
        assert_bitwise(actual, expected)
        return
    assert actual.shape == expected.shape and actual.dtype == expected.dtype
    eps = torch.finfo(expected.dtype).eps  # atol: a sum that cancels is off by ulps of its terms
    scale = expected.nan_to_num(posinf=0, neginf=0).abs().max().item() if expected.numel() else 0.0
    torch.testing.assert_close(actual, expected, rtol=ulps * eps, atol=ulps * eps * max(scale, 1.0), equal_nan=True)


def _first_difference(actual: torch.Tensor, expected: torch.Tensor) -> str:
    """Where two tensors first differ, with both bit patterns: NaN payloads and signed zeros show."""
    diff = (actual.double() - expected.double()).abs().nan_to_num(nan=0.0).max() if actual.is_floating_point() else None
    bits = _BITS.get(expected.dtype)
    if bits is None:
        return f"max abs diff {diff}"
    a, e = actual.contiguous().view(bits), expected.contiguous().view(bits)
    where = (a != e).nonzero()[0].tolist()
    mask = (1 << 8 * expected.element_size()) - 1
    return (f"max abs diff {diff} (NaNs excluded); first differing element {where}: "
            f"{actual[tuple(where)].item()!r} (0x{a[tuple(where)].item() & mask:x}) "
            f"vs eager's {expected[tuple(where)].item()!r} (0x{e[tuple(where)].item() & mask:x})")
