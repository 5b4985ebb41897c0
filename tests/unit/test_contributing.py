"""CONTRIBUTING.md names every module's room: each package of ``src/trainop`` and each module in
it has a line, so a newcomer finds where a thing lives from that one page."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "src" / "trainop"


def _modules() -> list[str]:
    return sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "__init__.py" and "__pycache__" not in path.parts
    )


def _packages() -> list[str]:
    return sorted(
        f"{path.parent.relative_to(PACKAGE)}/"
        for path in PACKAGE.rglob("__init__.py")
        if path.parent != PACKAGE
    )


def test_every_module_and_package_has_its_line() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    missing = [name for name in _modules() if f"- `{name}` — " not in text]
    missing += [name for name in _packages() if f"**`{name}`** — " not in text]
    assert missing == [], f"CONTRIBUTING.md does not name these modules' rooms: {missing}"


def test_no_line_names_a_module_that_is_gone() -> None:
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    named = [line.split("`")[1] for line in text.splitlines() if line.startswith("- `")]
    gone = [name for name in named if name.endswith(".py") and not (PACKAGE / name).is_file()]
    assert gone == [], f"CONTRIBUTING.md names modules that do not exist: {gone}"
