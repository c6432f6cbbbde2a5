"""User scripts must lie inside an allowed directory, symlinks resolved."""

import pytest

from training.launching.scripts import ScriptRefused, resolve_script


@pytest.fixture
def allowed(tmp_path, settings):
    folder = tmp_path / "allowed"
    folder.mkdir()
    settings.RUN_SCRIPT_DIRS = [str(folder)]
    return folder


def test_it_resolves_a_script_inside_an_allowed_directory(allowed):
    script = allowed / "train.py"
    script.write_text("print('hi')\n")
    assert resolve_script(str(script)) == script.resolve()


def test_it_refuses_a_path_outside_the_allowed_directories(allowed, tmp_path):
    outside = tmp_path / "elsewhere.py"
    outside.write_text("")
    with pytest.raises(ScriptRefused, match="outside the allowed"):
        resolve_script(str(outside))


def test_it_refuses_dot_dot_out_of_an_allowed_directory(allowed, tmp_path):
    (tmp_path / "escape.py").write_text("")
    with pytest.raises(ScriptRefused, match="outside the allowed"):
        resolve_script(str(allowed / ".." / "escape.py"))


def test_it_refuses_a_symlink_that_points_outside(allowed, tmp_path):
    target = tmp_path / "secret.py"
    target.write_text("")
    (allowed / "innocent.py").symlink_to(target)
    with pytest.raises(ScriptRefused, match="outside the allowed"):
        resolve_script(str(allowed / "innocent.py"))


@pytest.mark.parametrize(
    ("name", "message"),
    [("missing.py", "No such file"), ("notes.txt", "not a Python script"), ("folder", "not a file")],
)
def test_it_refuses_what_is_not_a_script(allowed, name, message):
    (allowed / "notes.txt").write_text("")
    (allowed / "folder").mkdir()
    with pytest.raises(ScriptRefused, match=message):
        resolve_script(str(allowed / name))


def test_it_refuses_a_relative_path(allowed):
    with pytest.raises(ScriptRefused, match="absolute"):
        resolve_script("train.py")


def test_scripts_are_off_until_an_admin_allows_a_directory(settings, tmp_path):
    settings.RUN_SCRIPT_DIRS = []
    with pytest.raises(ScriptRefused, match="RUN_SCRIPT_DIRS"):
        resolve_script(str(tmp_path / "train.py"))
