"""Claim directories stay below the provisioner's root (``controllers.volumes.directories``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from trainop.cluster.controllers.volumes import directories


@pytest.mark.parametrize(
    "name", ["..", ".", "../up", "a/b", "/abs", "", "x" * 64, "UPPER", "a\0b", "-lead", "a.b"]
)
def test_a_name_that_is_not_one_dns_label_gets_no_directory(tmp_path: Path, name: str) -> None:
    with pytest.raises(directories.DirectoryError):
        directories.path_for(tmp_path, name)
    with pytest.raises(directories.DirectoryError):
        directories.create(tmp_path / "root", name)
    assert not (tmp_path / "root").exists() or not any((tmp_path / "root").iterdir())
    assert not directories.owns(tmp_path, name, str(tmp_path / name))


def test_create_makes_a_private_directory_and_finds_it_again(tmp_path: Path) -> None:
    root = tmp_path / "volumes"
    made = directories.create(root, "pvc-1")
    assert made == root / "pvc-1"
    assert made.stat().st_mode & 0o777 == 0o700
    assert root.stat().st_mode & 0o777 == 0o700
    (made / "kept").write_text("x")
    assert directories.create(root, "pvc-1") == made
    assert (made / "kept").read_text() == "x"


def test_a_planted_symlink_is_neither_followed_nor_removed(tmp_path: Path) -> None:
    root = tmp_path / "volumes"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    (root / "pvc-2").symlink_to(outside)
    with pytest.raises(directories.DirectoryError):
        directories.create(root, "pvc-2")
    with pytest.raises(directories.DirectoryError):
        directories.remove(root, "pvc-2")
    assert (outside / "precious").read_text() == "keep"


def test_remove_deletes_everything_below_even_read_only_and_links_unfollowed(
    tmp_path: Path,
) -> None:
    root = tmp_path / "volumes"
    made = directories.create(root, "pvc-3")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "precious").write_text("keep")
    (made / "link").symlink_to(outside)
    locked = made / "locked"
    locked.mkdir()
    (locked / "f").write_text("x")
    locked.chmod(0o500)
    assert directories.remove(root, "pvc-3")
    assert not made.exists()
    assert (outside / "precious").read_text() == "keep"
    assert not directories.remove(root, "pvc-3")  # already gone


def test_owns_only_the_exact_directory_it_made(tmp_path: Path) -> None:
    assert directories.owns(tmp_path, "pvc-4", str(tmp_path / "pvc-4"))
    assert not directories.owns(tmp_path, "pvc-4", "/srv/data")
    assert not directories.owns(tmp_path, "pvc-4", str(tmp_path / "pvc-4" / ".."))
