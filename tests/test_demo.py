"""The main job runs end to end and reports what a user needs to see."""
from __future__ import annotations

import subprocess
import sys


def test_demo_quick_runs_and_reports() -> None:
    out = subprocess.run([sys.executable, "-m", "xpu_lite", "demo", "--quick", "--device", "cpu"], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    text = out.stdout
    assert "device cpu" in text
    assert "fallback: outside region" in text and "kernel" in text
    lite = next(line for line in text.splitlines() if line.startswith("lite ")).split()
    assert lite[2] == "0"  # recompiles over the sizes
    assert int(lite[3]) >= 1  # the annotated region became at least one kernel
    assert float(lite[5]) < 1e-4  # max |err| vs eager


def test_demo_rejects_unknown_command() -> None:
    out = subprocess.run([sys.executable, "-m", "xpu_lite", "demoo"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 2 and "invalid choice" in out.stderr
