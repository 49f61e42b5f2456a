from setuptools import find_packages, setup

setup(
    name="xpu_lite",
    version="0.1.0",
    description="torch.compile backend for Intel XPU with lite-mode decomposition control",
    packages=find_packages(include=["xpu_lite", "xpu_lite.*"]),
    python_requires=">=3.10",
    install_requires=["torch>=2.11"],
    extras_require={"test": ["pytest", "numpy", "triton"], "ipex": ["intel-extension-for-pytorch"]},
    entry_points={"torch_dynamo_backends": ["xpu_lite = xpu_lite.backend:xpu_lite_backend"]},
)
