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
    assert output.strip().splitlines() == [
        "field validation: Strict (unknown fields are errors, as kubectl's default "
        "--validate=strict)",
        "OK PyTorchJob/pytorch-simple",
    ]


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
    assert code == 2
    assert f"{bad}: spec.pytorchReplicaSpecs.Master.replicas: Invalid value:" in output
    assert "must be of type integer" in output
    assert "Traceback" not in output


def test_semantic_errors_are_reported(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: kubeflow.org/v1\nkind: XGBoostJob\nmetadata: {name: x}\n"
        "spec:\n  xgbReplicaSpecs:\n    Worker:\n"
        "      template: {spec: {containers: [{name: xgboost, image: i}]}}\n"
    )
    code, output = _run("validate", "-f", str(bad))
    assert code == 2
    # one line per field error, in kube-apiserver's words (upstream's XGBoost webhook detail)
    assert f"{bad}: spec.xgbReplicaSpecs[Master]: Required value: must be present" in output


def test_non_mapping_yaml_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "list.yaml"
    bad.write_text("- a\n- b\n")
    code, output = _run("validate", "-f", str(bad))
    assert code == 2
    assert output.strip().count("\n") == 0
    assert "expected a mapping" in output


def test_invalid_yaml_is_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "broken.yaml"
    bad.write_text("kind: [unclosed\n")
    code, output = _run("validate", "-f", str(bad))
    assert code == 2
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


MASTER = "      template: {spec: {containers: [{name: pytorch, image: i}]}}\n"


def _job(tmp_path: Path, spec: str, *, api_version: str = "kubeflow.org/v1") -> Path:
    path = tmp_path / "job.yaml"
    kind = "MPIJob" if "v2beta1" in api_version else "PyTorchJob"
    path.write_text(f"apiVersion: {api_version}\nkind: {kind}\nmetadata: {{name: x}}\n{spec}")
    return path


def test_a_v2beta1_spec_of_any_shape_names_the_field(tmp_path: Path) -> None:
    for spec in ("spec: 1.5\n", "spec: [abcd, efgh]\n", "spec: 7\n"):
        path = _job(tmp_path, spec, api_version="kubeflow.org/v2beta1")
        code, output = _run("validate", "-f", str(path))
        assert code == 2, output
        assert f"{path}: spec: Invalid value:" in output
        assert "Traceback" not in output


def test_integers_are_bounded_as_kube_bounds_them(tmp_path: Path) -> None:
    int32 = "spec:\n  pytorchReplicaSpecs:\n    Master:\n      replicas: 2147483648\n" + MASTER
    code, output = _run("validate", "-f", str(_job(tmp_path, int32)))
    assert code == 2
    assert (
        "spec.pytorchReplicaSpecs[Master].replicas: Invalid value: 2147483648: json: "
        "cannot unmarshal number 2147483648 into Go value of type int32"
    ) in output
    int64 = (
        "spec:\n  runPolicy: {activeDeadlineSeconds: 9223372036854775808}\n"
        "  pytorchReplicaSpecs:\n    Master:\n" + MASTER
    )
    code, output = _run("validate", "-f", str(_job(tmp_path, int64)))
    assert code == 2
    assert (
        'spec.runPolicy.activeDeadlineSeconds: Invalid value: "number": '
        'spec.runPolicy.activeDeadlineSeconds in body must be of type integer: "number"'
    ) in output


def test_a_whole_float_and_a_null_are_read_as_kube_reads_them(tmp_path: Path) -> None:
    spec = (
        "spec:\n  pytorchReplicaSpecs:\n    Worker: null\n    Master:\n      replicas: 1.0\n"
        + MASTER
    )
    code, output = _run("validate", "-f", str(_job(tmp_path, spec)))
    assert (code, output.splitlines()[-1]) == (0, "OK PyTorchJob/x")


def test_unknown_fields_follow_the_field_validation_mode(tmp_path: Path) -> None:
    spec = "spec:\n  runPolicy: {backofLimit: 3}\n  pytorchReplicaSpecs:\n    Master:\n" + MASTER
    path = _job(tmp_path, spec)
    code, output = _run("validate", "-f", str(path))
    assert code == 2
    assert output.splitlines()[0].startswith("field validation: Strict")
    assert (
        f'{path}: spec.runPolicy.backofLimit: Forbidden: unknown field "spec.runPolicy.' in output
    )
    code, output = _run("validate", "-f", str(path), "--field-validation", "Warn")
    assert code == 0
    assert output.splitlines()[0].startswith("field validation: Warn")
    assert '  warning: unknown field "spec.runPolicy.backofLimit"' in output
    code, output = _run("validate", "-f", str(path), "--field-validation", "Ignore")
    assert (code, output.splitlines()[1:]) == (0, ["OK PyTorchJob/x"])


def test_metadata_the_server_owns_is_not_judged_but_a_namespace_must_be_a_string(
    tmp_path: Path,
) -> None:
    path = tmp_path / "job.yaml"
    body = "spec:\n  pytorchReplicaSpecs:\n    Master:\n" + MASTER
    path.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\n"
        "metadata: {name: x, uid: 5, generation: x}\nstatus: 3\n" + body
    )
    assert _run("validate", "-f", str(path))[0] == 0
    path.write_text(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x, namespace: []}\n" + body
    )
    code, output = _run("validate", "-f", str(path))
    assert code == 2
    assert f"{path}: metadata.namespace: Invalid value: must be a string" in output
