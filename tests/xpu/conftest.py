import os

os.environ.setdefault("PYTORCH_ENABLE_XPU_FALLBACK", "0")
