"""``trainop validate -f FILE`` through click's runner."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from trainop.cli.main import main

ROOT = Path(__file__).resolve().parents[3]


def _run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, list(args))
    assert result.exception is None or isinstance(result.exception, SystemExit)
    return result.exit_code, result.output


def test_good_file_prints_ok() -> None:
    code, output = _run("validate", "-f", str(ROOT / "examples/pytorch/simple.yaml"))
    assert code == 0
    assert output.strip() == "OK PyTorchJob/pytorch-simple"


def test_warnings_are_printed() -> None:
    code, output = _run("validate", "-f", str(ROOT / "examples/mxnet/mxjob-train.yaml"))
    assert code == 0
    assert "warning: MXJob was removed" in output


def test_bad_file_names_each_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\n"
        "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: '2'\n"
        "      template: {spec: {containers: [{name: pytorch, image: i}]}}\n"
    )
    code, output = _run("validate", "-f", str(bad))
    assert code == 1
    assert output.startswith(f"{bad}: spec.pytorchReplicaSpecs[Master].replicas: Invalid:")
    assert "Traceback" not in output


def test_semantic_errors_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: x}\n"
        "spec:\n  xgbReplicaSpecs:\n    Worker:\n"
        "      template: {spec: {containers: [{name: xgboost, image: i}]}}\n"
    )
    code, output = _run("validate", "-f", str(bad))
    assert code == 1
    assert f"{bad}: spec.xgbReplicaSpecs" in output


def test_non_mapping_yaml_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n")
    code, output = _run("validate", "-f", str(bad))
    assert code == 1
    assert output.strip().count("\n") == 0
    assert "expected a mapping" in output


def test_invalid_yaml_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("kind: [unclosed\n")
    code, output = _run("validate", "-f", str(bad))
    assert code == 1
    assert "not valid YAML" in output
    assert "Traceback" not in output


def test_missing_file_is_one_line(tmp_path: Path) -> None:
    code, output = _run("validate", "-f", str(tmp_path / "absent.yaml"))
    assert code == 1
    assert output.strip().count("\n") == 0
    assert "cannot read" in output


def test_generate_check_lists_stale_files_then_generate_fixes_them(tmp_path: Path) -> None:
    code, output = _run("manifests", "generate", "--check", "--root", str(tmp_path))
    assert code == 1
    assert "stale: manifests/crds/tfjobs.yaml" in output
    assert "stale: docs/api-reference.md" in output
    code, _ = _run("manifests", "generate", "--root", str(tmp_path))
    assert code == 0
    code, output = _run("manifests", "generate", "--check", "--root", str(tmp_path))
    assert (code, output) == (0, "")


BOMB = 'a0: &a0 ["x","x","x","x","x","x","x","x","x"]\n' + "".join(
    f"a{i}: &a{i} [{','.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 9)
)


def test_an_alias_bomb_is_one_line_naming_the_file(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    for args in (["validate", "-f", str(path)], ["run", str(path)]):
        code, output = _run(*args)
        assert code in (1, 2), output
        assert f"{path}: YAML aliases expand the document" in output
        assert len(output.strip().splitlines()) == 1, output


def test_submit_refuses_an_alias_bomb_before_any_request(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(BOMB)
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: c, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {token: t}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    result = CliRunner().invoke(
        main, ["submit", "-f", str(path)], env={"KUBECONFIG": str(kubeconfig)}
    )
    assert result.exit_code != 0
    assert f"{path}: YAML aliases expand the document" in result.output
