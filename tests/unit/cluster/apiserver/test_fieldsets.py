"""Field sets in kube's FieldsV1 vocabulary: members of a value, update changes, encoding."""

from __future__ import annotations

from typing import Any

from trainop.cluster.apiserver import schemas
from trainop.cluster.apiserver.apply import fieldsets, shapes

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "image": {"type": "string"},
                "args": {"type": "array", "items": {"type": "string"}},
                "tags": {
                    "type": "array",
                    "items": {"type": "string"},
                    "x-kubernetes-list-type": "set",
                },
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name", "protocol"],
                    "items": {
                        "type": "object",
                        "properties": {
                            "name": {"type": "string"},
                            "protocol": {"type": "string"},
                            "port": {"type": "integer"},
                        },
                    },
                },
                "replicaSpecs": {
                    "type": "object",
                    "additionalProperties": {
                        "type": "object",
                        "properties": {"replicas": {"type": "integer"}},
                    },
                },
            },
        }
    },
}
CUSTOM = shapes.Shape(schema=SCHEMA, custom=True, root=True)
BUILTIN = shapes.Shape(root=True)


def test_members_follow_the_crd_schema() -> None:
    value = {
        "metadata": {"labels": {"app": "x"}},
        "spec": {
            "image": "i",
            "args": ["a", "b"],
            "tags": ["t"],
            "ports": [{"name": "http", "protocol": "TCP", "port": 80}],
            "replicaSpecs": {"Worker": {"replicas": 2}},
        },
    }
    assert fieldsets.encode(fieldsets.members(value, CUSTOM)) == {
        "f:metadata": {"f:labels": {"f:app": {}}},
        "f:spec": {
            "f:image": {},
            "f:args": {},
            "f:tags": {'v:"t"': {}},
            "f:ports": {
                'k:{"name":"http","protocol":"TCP"}': {
                    ".": {},
                    "f:name": {},
                    "f:protocol": {},
                    "f:port": {},
                }
            },
            "f:replicaSpecs": {"f:Worker": {".": {}, "f:replicas": {}}},
        },
    }


def test_builtin_lists_merge_by_their_patch_merge_key() -> None:
    pod = {
        "metadata": {"finalizers": ["a"]},
        "spec": {"containers": [{"name": "c", "image": "i", "command": ["x"]}]},
    }
    assert fieldsets.encode(fieldsets.members(pod, BUILTIN)) == {
        "f:metadata": {"f:finalizers": {'v:"a"': {}}},
        "f:spec": {
            "f:containers": {
                'k:{"name":"c"}': {".": {}, "f:name": {}, "f:image": {}, "f:command": {}}
            }
        },
    }


def test_a_list_that_repeats_a_key_is_atomic() -> None:
    value = {"spec": {"containers": [{"name": "c"}, {"name": "c"}]}}
    assert fieldsets.members(value, BUILTIN) == {("f:spec", "f:containers")}


def test_update_changes_take_added_maps_with_their_node() -> None:
    old = {"spec": {"image": "i"}}
    new = {"spec": {"image": "j", "replicaSpecs": {"Worker": {"replicas": 1}}}}
    changed, removed = fieldsets.changes(old, new, CUSTOM)
    assert fieldsets.encode(changed) == {
        "f:spec": {
            "f:image": {},
            "f:replicaSpecs": {".": {}, "f:Worker": {".": {}, "f:replicas": {}}},
        }
    }
    assert removed == set()
    _, removed = fieldsets.changes(new, old, CUSTOM)
    assert ("f:spec", "f:replicaSpecs", "f:Worker", "f:replicas") in removed


def test_encode_and_decode_are_inverse() -> None:
    paths = {("f:a",), ("f:a", "f:b"), ("f:c", 'k:{"name":"x"}'), ("f:c", 'k:{"name":"x"}', "f:y")}
    document = fieldsets.encode(paths)
    assert document["f:a"] == {".": {}, "f:b": {}}
    assert list(document["f:a"]) == [".", "f:b"]  # kube's order: the node first
    assert list(fieldsets.encode({("v:1",), ("f:z",), ('k:{"a":1}',)})) == [
        "f:z",
        'k:{"a":1}',
        "v:1",
    ]
    assert fieldsets.decode(document) == paths


def test_paths_read_and_remove_list_items() -> None:
    obj = {"spec": {"ports": [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "TCP"}]}}
    item = ("f:spec", "f:ports", 'k:{"name":"b","protocol":"TCP"}')
    assert fieldsets.read(obj, item) == {"name": "b", "protocol": "TCP"}
    assert fieldsets.remove(obj, item)
    assert obj["spec"]["ports"] == [{"name": "a", "protocol": "TCP"}]
    assert fieldsets.read(obj, item) is fieldsets.MISSING
    assert not fieldsets.remove(obj, item)


def test_paths_print_as_kube_prints_them() -> None:
    path = ("f:spec", "f:ports", 'k:{"name":"b","protocol":"TCP"}', "f:port")
    assert fieldsets.text(path) == '.spec.ports[name="b",protocol="TCP"].port'
    assert fieldsets.text(("f:metadata", "f:finalizers", 'v:"x"')) == '.metadata.finalizers[="x"]'


def test_depth_is_measured_without_recursion() -> None:
    deep: Any = 0
    for _ in range(50_000):
        deep = [deep]
    assert fieldsets.depth(deep) == 50_000
    assert fieldsets.depth({"a": {"b": 1}}) == 2
    assert fieldsets.depth("x") == 0


def test_a_created_builtin_object_owns_its_new_maps_but_not_its_structs() -> None:
    new = {"metadata": {"annotations": {"x": "y"}}, "spec": {"template": {"spec": {}}}}
    changed, _ = fieldsets.changes({}, new, BUILTIN)
    assert fieldsets.encode(changed) == {
        "f:metadata": {"f:annotations": {".": {}, "f:x": {}}},
        "f:spec": {"f:template": {"f:spec": {}}},
    }


def test_builtin_kinds_follow_their_published_list_markers() -> None:
    defs = schemas.load_definitions()
    pod = shapes.Shape(schema=defs["io.k8s.api.core.v1.Pod"], root=True, defs=defs)
    value = {
        "metadata": {"labels": {"a": "b"}},
        "spec": {
            "containers": [{"name": "c", "ports": [{"containerPort": 80}]}],
            "tolerations": [{"key": "k", "operator": "Exists"}],
        },
    }
    assert fieldsets.encode(fieldsets.members(value, pod)) == {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {
            "f:containers": {
                'k:{"name":"c"}': {
                    ".": {},
                    "f:name": {},
                    "f:ports": {
                        'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}
                    },
                }
            },
            "f:tolerations": {},  # atomic: x-kubernetes-list-type atomic
        },
    }
    new = {"metadata": {"annotations": {"x": "y"}}, "spec": {"nodeSelector": {"x": "y"}}}
    changed, _ = fieldsets.changes({"spec": {}}, new, pod)
    assert fieldsets.encode(changed) == {
        "f:metadata": {"f:annotations": {".": {}, "f:x": {}}},
        "f:spec": {"f:nodeSelector": {}},  # x-kubernetes-map-type: atomic
    }
