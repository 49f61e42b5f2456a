"""Command line: `python -m xpu_lite demo [--device cpu|cuda|xpu]`."""
from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m xpu_lite", description="xpu_lite torch.compile backend")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="compile a transformer block in lite and default mode and report")
    demo.add_argument("--device", default=None, help="cpu, cuda or xpu (default: best available; env XPU_LITE_DEVICE)")
    demo.add_argument("--quick", action="store_true", help="two small sizes only")
    args = parser.parse_args(argv)
    if args.command == "demo":
        from .demo import SIZES, main as demo_main
        from .runtime import device_or_usage_error

        device = device_or_usage_error(parser, args.device)
        return demo_main(str(device), SIZES[:2] if args.quick else SIZES)
    return 2


if __name__ == "__main__":
    sys.exit(main())
