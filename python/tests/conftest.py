"""Shared fixtures: the repository's examples, a private cache directory per test, and the
`gpu` marker's skip when no GPU (or no torch with CUDA) is present."""

import os
import pathlib

import pytest

EXAMPLES = pathlib.Path(__file__).resolve().parents[2] / "examples"


def example(name: str) -> str:
    return (EXAMPLES / name).read_text()


@pytest.fixture(autouse=True)
def private_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TILEC_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _gpu_reason():
    try:
        import torch
    except ImportError:
        return "PyTorch is not installed"
    if not torch.cuda.is_available():
        return "no CUDA device"
    if torch.cuda.get_device_capability() < (9, 0):
        return "needs sm_90 or newer"
    return None


def pytest_collection_modifyitems(config, items):
    reason = None
    for item in items:
        if "gpu" in item.keywords:
            if reason is None:
                reason = _gpu_reason() or ""
            if reason:
                item.add_marker(pytest.mark.skip(reason=reason))
    if os.environ.get("TILEC_REQUIRE_GPU") and reason:
        raise pytest.UsageError(f"TILEC_REQUIRE_GPU is set but the GPU tests cannot run: {reason}")
