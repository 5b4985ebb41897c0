"""The generated API reference covers every field and links embedded Kubernetes types."""

from __future__ import annotations

import pytest

from trainop.api import kinds, reference, types


@pytest.fixture(scope="module")
def text() -> str:
    return reference.render()


@pytest.mark.parametrize("info", kinds.KINDS, ids=lambda i: i.kind)
def test_every_spec_field_is_listed(info: kinds.KindInfo, text: str) -> None:
    spec = info.model.model_fields["spec"].annotation
    assert spec is not None
    for name, field in spec.model_fields.items():
        assert f"| `spec.{field.alias or name}` |" in text
    assert f"## {info.kind}\n" in text


def test_common_types_have_their_own_sections(text: str) -> None:
    for model in (types.RunPolicy, types.ReplicaSpec, types.JobStatus, types.JobCondition):
        assert f"### {model.__name__}\n" in text
        for name, field in model.model_fields.items():
            assert f"| `{field.alias or name}` |" in text


def test_nested_kind_fields_use_dotted_paths(text: str) -> None:
    assert "| `spec.elasticPolicy.rdzvConf[].key` | string |" in text
    assert "| `spec.jobMode` | string | required |" in text
    assert "| `suspend` | boolean | `false` |" in text


def test_embedded_kubernetes_types_are_links_not_expanded(text: str) -> None:
    assert "#podtemplatespec-v1-core" in text
    assert "#metricspec-v2-autoscaling" in text
    assert "containers" not in text
