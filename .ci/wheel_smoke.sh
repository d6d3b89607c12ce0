#!/usr/bin/env bash
# The wheel a user installs: build the sdist and the wheel, check both, install the wheel (not
# editable) into a fresh venv outside the checkout, and run aliascheck there on tests/wheel/.
# Outside, because run from the checkout `import aliascheck` would find the in-tree package.
# Fails if the wheel lacks a module, an entry point or the aliascheck-child.pth startup hook.
#
#   .ci/wheel_smoke.sh           build into a temporary directory, check, install, run
#   .ci/wheel_smoke.sh DIST      skip the build: install and run the wheel in DIST
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
bin=${ALIASCHECK_DEV_BIN:-$repo/.venv/bin}  # build, twine and check-wheel-contents (the dev extra)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if [ $# -ge 1 ]; then
    dist=$(cd "$1" && pwd)
else
    dist=$work/dist
    # PYTHONDONTWRITEBYTECODE makes setuptools warn that it skips byte-compiling: not a warning about us.
    if ! env -u PYTHONDONTWRITEBYTECODE "$bin/python" -m build --outdir "$dist" "$repo" >"$work/build.log" 2>&1; then
        cat "$work/build.log"; exit 1
    fi
    if grep -nE 'WARNING|[Ww]arning:' "$work/build.log"; then
        echo "wheel_smoke: python -m build printed the warnings above" >&2; exit 1
    fi
    "$bin/twine" check --strict "$dist"/*
    "$bin/check-wheel-contents" "$dist"/*.whl
fi
wheels=("$dist"/*.whl)
[ "${#wheels[@]}" -eq 1 ] && [ -f "${wheels[0]}" ] || { echo "wheel_smoke: expected one wheel in $dist" >&2; exit 1; }

echo "== wheel: install ${wheels[0]##*/} into a fresh venv in $work"
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install -q "${wheels[0]}"
mkdir "$work/run" && cp "$repo"/tests/wheel/*.py "$work/run/"
cd "$work/run"
unset PYTHONPATH
"$work/venv/bin/python" "$repo/.ci/wheel_contents.py" "$repo"

# expect RC PATTERN... -- COMMAND...: COMMAND exits RC and prints every PATTERN (fixed strings).
expect() {
    local rc=$1 patterns=() out status=0
    shift
    while [ "$1" != "--" ]; do patterns+=("$1"); shift; done
    shift
    out=$("$@" 2>&1) || status=$?
    local bad=""
    [ "$status" -eq "$rc" ] || bad="exit $status, expected $rc"
    for p in "${patterns[@]}"; do
        grep -qF -- "$p" <<<"$out" || bad="${bad:+$bad; }no line with: $p"
    done
    if [ -n "$bad" ]; then
        printf '%s\n' "$out"
        echo "wheel_smoke: FAILED: $*: $bad" >&2
        exit 1
    fi
    echo "wheel_smoke: ok: $* (exit $status)"
}

py="$work/venv/bin"
expect 1 "aliascheck [mutation]: case_buggy.Progress.state_dict (case_buggy.py:18) hands out live state" \
         "aliascheck [mutation]: case_buggy.settings (cache) handed out settings()" \
         "2 failed" \
    -- "$py/pytest" -p no:cacheprovider --aliascheck case_buggy.py
expect 0 "2 passed" "aliascheck: 2 tests," "case_fixed.Progress (2)" "case_fixed.settings (cache)" \
    -- "$py/pytest" -p no:cacheprovider --aliascheck case_fixed.py
expect 1 "aliascheck [mutation]: __main__.Progress.state_dict (child_job.py:" "process:  pid" "1 failed" \
    -- "$py/pytest" -p no:cacheprovider --aliascheck case_child.py
expect 1 "[mutation] counters.Counter.state_dict (counters.py:" \
         "2 classes (1 clean, 1 with findings, 0 skipped, 0 errors)" \
    -- "$py/aliascheck" check counters
echo "wheel_smoke: the installed wheel works"
