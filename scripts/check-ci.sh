#!/bin/sh
# examples/ci/'s workflow files checked by check-jsonschema against the schemas its wheel ships
# (GitHub Actions workflows: SchemaStore's; GitLab CI: GitLab's). The unit test
# tests/unit/test_ci_examples.py checks them against copies of the same schemas offline.
set -eu
VERSION=0.39.0
VENV=${CHECK_CI_VENV:-/tmp/linklab-check-ci}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
if ! "$VENV/bin/check-jsonschema" --version 2>/dev/null | grep -q "$VERSION"; then
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install -q "check-jsonschema==$VERSION"
fi
"$VENV/bin/check-jsonschema" --builtin-schema vendor.github-workflows "$ROOT/examples/ci/github-linklab-ab.yml"
"$VENV/bin/check-jsonschema" --builtin-schema vendor.gitlab-ci "$ROOT/examples/ci/gitlab-linklab-ab.yml"
