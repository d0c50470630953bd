#!/usr/bin/env bash
# Fill .whl/ with what benchmarks/device_grid.sh installs on a bare GPU machine (Python 3.12, x86_64, no
# network): structgen's own wheel, built from this checkout, and the packages that machine's image lacks, at
# the versions installed here. Run it in the repository root with the project's venv active, after any change
# to the package; then call the device tool with carry [".whl"]. /work/.library/device/README.md says why.
#
#   bash benchmarks/device_wheels.sh
set -eu
PY=${PY:-python}
mkdir -p .whl
grep -qx '/.whl/' .git/info/exclude 2>/dev/null || echo /.whl/ >> .git/info/exclude
# what the image lacks (its own torch, transformers, tokenizers, numpy, typer and rich serve as they are)
PKGS="outlines_core llguidance lark jsonschema jsonschema-specifications referencing rpds-py pydantic pydantic_core
annotated-types typing-inspection typing_extensions sqlglot tree-sitter tree-sitter-python tree-sitter-sql fqdn
isoduration jsonpointer rfc3339-validator rfc3986-validator rfc3987-syntax uri-template webcolors arrow tzdata"
PLATFORMS=""
for p in manylinux1 manylinux2014 manylinux_2_17 manylinux_2_24 manylinux_2_27 manylinux_2_28 manylinux_2_31 \
         manylinux_2_34 manylinux_2_35; do PLATFORMS="$PLATFORMS --platform ${p}_x86_64"; done
for pkg in $PKGS; do
  version=$($PY -m pip show "$pkg" 2>/dev/null | awk '/^Version:/ {print $2}')
  [ -n "$version" ] || { echo "$pkg is not installed here: install the project first (README)"; exit 1; }
  # shellcheck disable=SC2086
  $PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $PLATFORMS \
    -d .whl "$pkg==$version" 2>&1 | grep -v '^WARNING' || true
done
rm -f .whl/structgen-*.whl
$PY -m pip wheel -q --no-deps --no-build-isolation -w .whl . 2>&1 | grep -v '^WARNING' || true
rm -rf build
ls .whl | wc -l
du -sh .whl
