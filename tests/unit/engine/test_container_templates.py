"""Init-container templates: each render is the caller's own copy, loaded as PyYAML's safe loader
loads the rendered text, and a broken template is refused every time (errors are not cached)."""

from __future__ import annotations

import pytest
import yaml

from trainop import errors
from trainop.frameworks.container_templates import render

TEMPLATE = """
- name: init-pytorch
  image: {{.InitContainerImage}}
  command: ['sh', '-c', 'until nslookup {{.MasterAddr}}; do sleep 2; done']
  env: [{name: N, value: "8"}, {name: ON, value: yes}]
  resources: {limits: {cpu: 100m, memory: 20Mi}}
"""
VALUES = {"InitContainerImage": "alpine:3.10", "MasterAddr": "job-master-0"}


def test_a_render_is_what_the_safe_loader_reads_and_the_callers_own_copy() -> None:
    first = render(TEMPLATE, VALUES)
    expected = yaml.safe_load(TEMPLATE.replace("{{.InitContainerImage}}", "alpine:3.10")
                              .replace("{{.MasterAddr}}", "job-master-0"))  # fmt: skip
    assert first == expected
    assert first[0]["env"][1]["value"] is True  # YAML 1.1: yes is a boolean, as upstream reads it
    first[0]["env"].append({"name": "EXTRA"})
    first[0]["image"] = "changed"
    again = render(TEMPLATE, VALUES)
    assert again == expected, "a caller's edits never reach the next render"
    assert render(TEMPLATE, {**VALUES, "MasterAddr": "other"})[0]["command"][2].endswith(
        "nslookup other; do sleep 2; done"
    )


@pytest.mark.parametrize(
    ("template", "message"),
    [("- name: [unclosed", "template is not YAML"), ("name: x", "list of named containers")],
)
def test_a_broken_template_is_refused_on_every_render(template: str, message: str) -> None:
    for _ in range(2):
        with pytest.raises(errors.InvalidTemplateError, match=message):
            render(template, VALUES)
