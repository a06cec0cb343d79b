#!/usr/bin/env bash
# The lowest versions pyproject.toml allows, tested: a second virtualenv with every runtime
# dependency at the lower bound of its range (read from [project].dependencies, so a raised
# floor is tested as soon as it is written), the test extras beside them, and the unit tests
# with the integration tests of delivery, classification and the API.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
VENV=${FLOORS_VENV:-.venv-floors}

# One "name==floor" line per runtime dependency with a ">=" bound, its marker kept.
floors=$("$PYTHON" - <<'EOF'
import re
import sys
import tomllib

with open("pyproject.toml", "rb") as file:
    dependencies = tomllib.load(file)["project"]["dependencies"]
for requirement in dependencies:
    spec, _, marker = requirement.partition(";")
    name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", spec)
    floor = re.search(r">=\s*([^,\s]+)", spec)
    if name is None or floor is None:
        sys.exit(f"no lower bound to test in {requirement!r}: write it as name>=version")
    print(f"{name.group(1)}=={floor.group(1)}" + (f"; {marker.strip()}" if marker else ""))
EOF
)

# Built again only when the floors (or pyproject.toml's extras) change.
stamp="$VENV/.floors-$(cksum < pyproject.toml | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
  echo "building $VENV with the floors:" $(echo "$floors" | cut -d';' -f1)
  "$PYTHON" -m venv --clear "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  echo "$floors" > "$VENV/floors.txt"
  # Pinned beside the test extras, which may therefore not lift a runtime dependency above one.
  "$VENV/bin/pip" install -q -r "$VENV/floors.txt" -e '.[test]'
  touch "$stamp"
fi
"$VENV/bin/pip" check
"$VENV/bin/python" - "$VENV/floors.txt" <<'EOF'
import sys
from importlib.metadata import PackageNotFoundError, version

from packaging.version import Version

pins = [line.split(";")[0].strip() for line in open(sys.argv[1])]
for pin in pins:
    name, wanted = pin.split("==")
    try:
        found = version(name)
    except PackageNotFoundError:
        continue  # its marker leaves it out on this Python
    if Version(found) != Version(wanted):
        sys.exit(f"{name} {found} is installed, not its floor {wanted}")
print("floors installed:", ", ".join(pins))
EOF

"$VENV/bin/pytest" -q -p no:cacheprovider "$@" \
  tests/unit \
  tests/integration/test_delivery.py \
  tests/integration/test_delivery_timeout.py \
  tests/integration/test_private_targets.py \
  tests/integration/test_retries.py \
  tests/integration/test_bulk_publish.py \
  tests/integration/test_webhook_api.py \
  tests/integration/test_payments.py \
  tests/api/test_unreadable_bodies.py
