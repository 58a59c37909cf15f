#!/usr/bin/env bash
# On the GPU machine (no network): install quack-kernels 0.6.5 (softmax, RMSNorm, LayerNorm
# in CuTe DSL) and the CuTe DSL 4.8.1 (CUDA 13 flavour) with apache-tvm-ffi into /tmp/site,
# from what tools/gpu/pack_quack.sh made here in .whl. Progress goes to stderr; the one
# line on stdout, once everything is installed, is the export to use:
#
#     export PYTHONPATH=/tmp/site
#
# Why several calls: the packed site is about 56 MB and a device call carries 64 MiB in
# all, of which the tracked tree takes about 31 MiB. So the archive travels in parts, one a
# call: .whl/1 in one call, .whl/2 in the next, while the machine is still warm (it is given
# back 30 s after a call ends; a fresh machine starts bare and the parts already sent are
# lost). Each call runs this script: it copies the parts it finds under .whl/*/ to
# /tmp/quack_parts (SHA-256 checked against MANIFEST), and once all are there it joins
# them, checks the archive and unpacks it into /tmp/site. Exit status: 0 installed (or
# already installed); 3 parts still missing (this call's parts are kept; make the next
# call, with the next part, at once); 2 no .whl here; 1 anything else. Any .whl/*.whl
# (a wheel carried the README's way) is also pip-installed into /tmp/site.
#
# Device calls (tools need the part in `carry`; start the command from the repo root):
#   call 1: carry [".whl/1", ...]   command: tools/gpu/install_quack.sh || [ $? = 3 ]; ...
#   call 2: carry [".whl/2", ...]   command: e=$(tools/gpu/install_quack.sh) && eval "$e" &&
#                                            python3 tools/gpu/kernels.py ... --time
# `tools/gpu/install_quack.sh && export PYTHONPATH=/tmp/site` does the same as the eval.
# PYTHONPATH=/tmp/site is enough: pip's --target does not run the DSL's .pth file (it puts
# nvidia_cutlass_dsl/dsl_packages on sys.path), so this writes /tmp/site/cutlass, a stub
# package that puts that folder first on sys.path and imports the real cutlass in its place.
#
# Options: --check also imports quack, cutlass and tvm_ffi with that PYTHONPATH and prints
# their versions (a few seconds: it imports torch). Environment: QUACK_SITE (default
# /tmp/site), QUACK_PARTS (default /tmp/quack_parts).
set -euo pipefail
cd "$(dirname "$0")/../.."
site=${QUACK_SITE:-/tmp/site}
stage=${QUACK_PARTS:-/tmp/quack_parts}
check=0
[ "${1:-}" = --check ] && check=1
say() { echo "install_quack.sh: $*" >&2; }

if [ ! -d .whl ]; then
    say "no .whl folder in $PWD. Make it here with tools/gpu/pack_quack.sh and name its part"
    say "(.whl/1, then .whl/2 in the next call) in the device call's carry."
    exit 2
fi
mkdir -p "$site" "$stage"

shopt -s nullglob
wheels=(.whl/*.whl)
if [ ${#wheels[@]} -gt 0 ]; then
    say "pip-installing ${#wheels[@]} wheel(s) into $site"
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target "$site" "${wheels[@]}" >&2
fi

marker=$site/.quack_site_installed
manifest=""
for m in .whl/*/MANIFEST "$stage/MANIFEST"; do [ -f "$m" ] && { manifest=$m; break; }; done
if [ -z "$manifest" ]; then
    if [ -f "$marker" ]; then
        say "already installed in $site ($(cat "$marker"))"
    elif [ ${#wheels[@]} -eq 0 ]; then
        say "nothing to install: .whl has no wheels and no part folder (.whl/N/MANIFEST)"
        exit 1
    fi
else
    archive_sha=$(awk '$1 == "archive" {print $3}' "$manifest")
    if [ -f "$marker" ] && [ "$(cat "$marker")" = "$archive_sha" ]; then
        say "already installed in $site (archive $archive_sha)"
    else
        [ "$manifest" -ef "$stage/MANIFEST" ] || cp "$manifest" "$stage/MANIFEST"
        missing=()
        while read -r kind i name sha size; do
            [ "$kind" = part ] || continue
            have=$stage/$name
            if [ ! -f "$have" ] || [ "$(sha256sum "$have" | cut -d' ' -f1)" != "$sha" ]; then
                rm -f "$have"
                for src in .whl/*/"$name"; do
                    if [ "$(sha256sum "$src" | cut -d' ' -f1)" = "$sha" ]; then
                        cp "$src" "$have"
                        say "part $i ($size bytes) staged in $stage"
                    else
                        say "$src does not match MANIFEST (a part of another pack?)"
                    fi
                done
            fi
            [ -f "$have" ] || missing+=("$i")
        done < "$stage/MANIFEST"
        if [ ${#missing[@]} -gt 0 ]; then
            say "parts still missing: ${missing[*]}. Make the next device call now, carrying"
            say ".whl/${missing[0]} (the machine keeps $stage only while it stays warm)."
            exit 3
        fi
        say "all parts here: joining, checking and unpacking into $site"
        joined=$stage/quack_site.tar.xz
        cat $(awk '$1 == "part" {print "'"$stage"'/" $3}' "$stage/MANIFEST") > "$joined"
        [ "$(sha256sum "$joined" | cut -d' ' -f1)" = "$archive_sha" ] ||
            { say "joined archive does not match MANIFEST"; rm -f "$joined"; exit 1; }
        if command -v xz > /dev/null; then
            xz -dc "$joined" | tar -C "$site" -xf -
        else
            python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1], "r:xz").extractall(sys.argv[2], filter="tar")' \
                "$joined" "$site"
        fi
        rm -f "$joined"
        echo "$archive_sha" > "$marker"
    fi
fi

# The stub package: what the DSL's nvidia_cutlass_dsl_packages.pth would do in site-packages.
if [ -d "$site/nvidia_cutlass_dsl/dsl_packages/cutlass" ] && [ ! -f "$site/cutlass/__init__.py" ]; then
    mkdir -p "$site/cutlass"
    cat > "$site/cutlass/__init__.py" << 'EOF'
# Written by tools/gpu/install_quack.sh: the CuTe DSL lives in
# nvidia_cutlass_dsl/dsl_packages, which its .pth file would put on sys.path in a real
# site-packages. Do that, then import the real cutlass in this stub's place.
import os as _os
import sys as _sys

_real = _os.path.join(_os.path.dirname(_os.path.dirname(_os.path.abspath(__file__))),
                      "nvidia_cutlass_dsl", "dsl_packages")
if _real not in _sys.path:
    _sys.path.insert(0, _real)
del _sys.modules[__name__]
import importlib as _importlib  # noqa: E402

_sys.modules[__name__] = _importlib.import_module(__name__)
EOF
fi

if [ "$check" = 1 ]; then
    PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} python3 -c '
import quack, cutlass, tvm_ffi
import cutlass.cute
print("quack", quack.__version__, "| cutlass", getattr(cutlass, "__version__", "?"),
      cutlass.__file__, "| tvm_ffi", tvm_ffi.__version__)' >&2
fi
echo "export PYTHONPATH=$site\${PYTHONPATH:+:\$PYTHONPATH}"
