#!/usr/bin/env bash
# The pinned sets, from pyproject.toml, by pip-compile (pip-tools):
#   requirements.txt       the main job's dependencies and every extra: what `make test` and CI
#                          install (the suite exercises them all); an extra on its own
#                          (scripts/setup.sh --with sdn) is installed pinned by it too
#   requirements-main.txt  the main job's dependencies alone: what `make setup` installs; compiled
#                          against requirements.txt (--constraint), so every pin is the same in both
# pip-compile (pip-tools) runs from a virtualenv of its own under /tmp, never the project's .venv.
# Pins already in requirements.txt stay unless pyproject.toml's ranges exclude them; to move them on purpose:
#   scripts/requirements.sh --upgrade                 every pin to the newest the ranges allow
#   scripts/requirements.sh --upgrade-package NAME    one
set -euo pipefail
cd "$(dirname "$0")/.."
TOOLS=${PIP_TOOLS_VENV:-/tmp/linklab-pip-tools}
if [ ! -x "$TOOLS/bin/pip-compile" ]; then
  echo "linklab requirements: installing pip-tools into $TOOLS"
  python3 -m venv "$TOOLS"
  "$TOOLS/bin/pip" install -q --disable-pip-version-check pip-tools==7.6.2
fi
# The header of requirements.txt names this script (CUSTOM_COMPILE_COMMAND), not pip-compile's argv.
CUSTOM_COMPILE_COMMAND="scripts/requirements.sh   (make requirements; pip-compile, see the script)" \
  "$TOOLS/bin/pip-compile" -q --strip-extras --no-emit-find-links --extra sdn --extra cluster --extra docs \
  --extra test --output-file requirements.txt "$@" pyproject.toml
CUSTOM_COMPILE_COMMAND="scripts/requirements.sh   (make requirements; pip-compile, see the script)" \
  "$TOOLS/bin/pip-compile" -q --strip-extras --no-emit-find-links --constraint requirements.txt \
  --output-file requirements-main.txt "$@" pyproject.toml
echo "linklab requirements: requirements.txt, requirements-main.txt written (git diff: what moved)"
