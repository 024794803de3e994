"""The container manifests are valid against their published schemas, checked offline."""

from __future__ import annotations

import json
import subprocess
import sys
from importlib import resources
from pathlib import Path

import jsonschema
import kubernetes_validate
import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
K8S = sorted((ROOT / "deploy" / "k8s").glob("*.yaml"))


def compose_schema() -> dict:
    schema_file = resources.files("check_jsonschema") / "builtin_schemas" / "vendor" / "compose-spec.json"
    return json.loads(schema_file.read_text())


def test_compose_file_matches_the_compose_specification():
    document = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    jsonschema.validate(document, compose_schema())


def test_compose_schema_rejects_a_broken_file():
    """The validator is really checking: a service with a non-list `ports` is refused."""
    document = {"services": {"master": {"image": "x", "ports": {"bad": 1}}}}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(document, compose_schema())


def test_compose_check_jsonschema_cli_agrees():
    result = subprocess.run(
        [sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.compose-spec",
         str(ROOT / "docker-compose.yml")],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_master_publishes_the_web_ui_on_loopback_only():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert services["master"]["ports"] == ["127.0.0.1:8089:8089"]
    assert "--worker" in services["worker"]["command"]
    assert {"mark", "mcp", "kneo", "mdk", "brain"} <= {p for s in services.values() for p in s.get("profiles", [])}


@pytest.mark.parametrize("manifest", K8S, ids=[p.name for p in K8S])
def test_kubernetes_manifests_validate_strictly(manifest: Path):
    for document in yaml.safe_load_all(manifest.read_text()):
        if document.get("kind") == "Kustomization":
            for resource in document["resources"]:
                assert (manifest.parent / resource).exists(), resource
            continue
        kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_kubernetes_validation_rejects_an_unknown_field():
    bad = yaml.safe_load((ROOT / "deploy" / "k8s" / "worker.yaml").read_text())
    bad["spec"]["replicaz"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, kubernetes_validate.latest_version(), strict=True)


def test_workers_and_master_request_and_limit_resources():
    for name in ("master.yaml", "worker.yaml"):
        for document in yaml.safe_load_all((ROOT / "deploy" / "k8s" / name).read_text()):
            if document["kind"] != "Deployment":
                continue
            for container in document["spec"]["template"]["spec"]["containers"]:
                assert container["resources"]["requests"] and container["resources"]["limits"]
