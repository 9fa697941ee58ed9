"""policy_names.py — the policies' names for the tools' Python scripts, read from the one
table (src/common/enpu_policy.h, ENPU_POLICY_NAME_*), so a script names a policy by its id
(NAME["NODVFS"]) and never spells it: the table stays the one place a name is written
(tests/integration/check_source.py holds the C sources to the same rule)."""
import os
import re

_HEADER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src", "common", "enpu_policy.h")


def _read(path=_HEADER):
    with open(path) as f:
        names = dict(re.findall(r'#define ENPU_POLICY_NAME_(\w+) "([^"]+)"', f.read()))
    if not names:
        raise RuntimeError(f"{path}: no ENPU_POLICY_NAME_* macro read")
    return names


NAME = _read()
