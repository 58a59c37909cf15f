#!/usr/bin/env bash
# The Python package's tests: install it into ./.venv as a user does (`pip install ./python`,
# which builds the extension with maturin in release mode) and run pytest on python/tests.
# Without a GPU (and PyTorch with CUDA) the tests marked `gpu` are skipped and say why;
# TILEC_REQUIRE_GPU=1 makes that an error. Run scripts/install-deps.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/pip install -q pytest
.venv/bin/pip install -q ./python
.venv/bin/pytest -q -rs python/tests
