"""Is requirements/ci.txt still what pyproject.toml asks for?

`make venv` installs the hashed set in requirements/ci.txt (`make run`, the
smaller one in requirements/run.txt), then this check runs: every requirement
that pyproject.toml names for the set (its dependencies, the extras and the
dependency groups it installs, the build backend) must be pinned there
to a release its specifier admits, and every pin must carry its hashes.
Otherwise the file is stale (a floor raised, a dependency added) and the
venv is refused, naming each requirement and the command that regenerates it.

    python -m devkit.pins [requirements/ci.txt | requirements/run.txt]
"""

from __future__ import annotations

import re
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

CHECKOUT = Path(__file__).resolve().parent.parent
REGENERATE = "sh requirements/compile.sh"


@dataclass(frozen=True)
class PinnedSet:
    """A hashed requirements file and what of pyproject.toml it must cover."""

    path: Path
    extras: tuple[str, ...]
    groups: tuple[str, ...]


# `make venv`: the project with its extras for CI, and the tools of
# development, the benchmarks and the documentation (dependency groups).
CI = PinnedSet(
    CHECKOUT / "requirements" / "ci.txt", ("binary", "runtime"), ("dev", "bench", "docs")
)
# `make run`: only what the demo needs.
RUN = PinnedSet(CHECKOUT / "requirements" / "run.txt", ("binary", "runtime"), ())
PINNED = CI.path

# `name==version \` opens a pin; its `--hash=sha256:...` lines follow.
_PIN = re.compile(r"^(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*)==(?P<version>\S+)")
_HASH = re.compile(r"--hash=sha256:[0-9a-f]{64}")


@dataclass(frozen=True)
class Pin:
    version: Version
    hashes: int


def pins(text: str) -> dict[str, Pin]:
    """The pins of a requirements file, by canonical name, with their hash counts."""
    found: dict[str, Pin] = {}
    name = ""
    for line in text.splitlines():
        if match := _PIN.match(line):
            name = canonicalize_name(match["name"])
            found[name] = Pin(Version(match["version"]), len(_HASH.findall(line)))
        elif name and line.startswith(" ") and (hashes := _HASH.findall(line)):
            found[name] = Pin(found[name].version, found[name].hashes + len(hashes))
    return found


def wanted(
    pyproject: dict[str, object], pinned_set: PinnedSet = CI
) -> list[tuple[Requirement, str]]:
    """Each requirement the set installs, with where pyproject.toml states it."""
    project = pyproject["project"]
    build = pyproject["build-system"]
    groups = pyproject.get("dependency-groups", {})
    assert isinstance(project, dict) and isinstance(build, dict) and isinstance(groups, dict)
    found = [(Requirement(text), "dependencies") for text in project["dependencies"]]
    extras = project.get("optional-dependencies", {})
    for extra in pinned_set.extras:
        found += [(Requirement(text), f"the {extra} extra") for text in extras.get(extra, [])]
    for group in pinned_set.groups:
        found += [(Requirement(text), f"the {group} group") for text in _group(groups, group)]
    found += [(Requirement(text), "[build-system]") for text in build["requires"]]
    return found


def _group(groups: dict[str, list[object]], name: str) -> list[str]:
    """A dependency group's requirements, with the groups it includes (PEP 735)."""
    texts: list[str] = []
    for entry in groups.get(name, []):
        if isinstance(entry, dict):
            texts += _group(groups, str(entry["include-group"]))
        else:
            texts.append(str(entry))
    return texts


def problems(
    pyproject: dict[str, object], pinned_text: str, pinned_set: PinnedSet = CI
) -> list[str]:
    """One line per requirement the pinned file does not satisfy (none: fresh)."""
    pinned = pins(pinned_text)
    lines = []
    for requirement, where in wanted(pyproject, pinned_set):
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue  # not for this platform or Python
        pin = pinned.get(canonicalize_name(requirement.name))
        if pin is None:
            lines.append(f"{requirement} ({where}) is not pinned")
        elif not requirement.specifier.contains(pin.version, prereleases=True):
            lines.append(f"{requirement} ({where}) is pinned to {pin.version}")
    unhashed = [f"{name}=={pin.version}" for name, pin in pinned.items() if not pin.hashes]
    lines += [f"{pin} has no hash" for pin in unhashed]
    return lines


def main(argv: list[str]) -> int:
    pinned_file = Path(argv[0]) if argv else CI.path
    pinned_set = RUN if pinned_file.name == RUN.path.name else CI
    pyproject = tomllib.loads((CHECKOUT / "pyproject.toml").read_text())
    found = problems(pyproject, pinned_file.read_text(), pinned_set)
    for line in found:
        print(f"{pinned_file} is stale: {line}; regenerate it: {REGENERATE}", file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
