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

pytestmark = pytest.mark.integration  # starts servers, processes or locust runs

ROOT = Path(__file__).resolve().parents[2]
K8S_DIR = ROOT / "deploy" / "k8s"
K8S = sorted(K8S_DIR.rglob("*.yaml"))


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
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.compose-spec",
            str(ROOT / "docker-compose.yml"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_master_publishes_the_web_ui_on_loopback_only():
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert services["master"]["ports"] == ["127.0.0.1:${SWARMGAUGE_WEB_PORT:-8089}:8089"]
    assert "--worker" in services["worker"]["command"]
    assert {"mark", "mcp", "kneo", "mdk", "brain"} <= {p for s in services.values() for p in s.get("profiles", [])}


@pytest.mark.parametrize("manifest", K8S, ids=[str(p.relative_to(K8S_DIR)) for p in K8S])
def test_kubernetes_manifests_validate_strictly(manifest: Path):
    for document in yaml.safe_load_all(manifest.read_text()):
        if document.get("kind") == "Kustomization":
            for resource in document["resources"]:
                assert (manifest.parent / resource).exists(), resource
            continue
        kubernetes_validate.validate(document, kubernetes_validate.latest_version(), strict=True)


def test_kubernetes_validation_rejects_an_unknown_field():
    bad = yaml.safe_load((K8S_DIR / "base" / "worker.yaml").read_text())
    bad["spec"]["replicaz"] = 2
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(bad, kubernetes_validate.latest_version(), strict=True)


def _pod_specs() -> list[tuple[str, dict]]:
    """Every pod spec in the manifests: a Pod's own, a Deployment's or a Job's template."""
    specs = []
    for manifest in K8S:
        for document in yaml.safe_load_all(manifest.read_text()):
            if document.get("kind") == "Pod":
                specs.append((manifest.name, document["spec"]))
            elif document.get("kind") in ("Deployment", "Job"):
                specs.append((manifest.name, document["spec"]["template"]["spec"]))
    return specs


def test_every_container_requests_and_limits_resources():
    specs = _pod_specs()
    assert len(specs) == 4, "web master, headless master, workers, results pod"
    for name, spec in specs:
        for container in spec["containers"]:
            assert container["resources"]["requests"] and container["resources"]["limits"], name


def test_the_configmap_scenario_is_a_valid_plan_and_locustfile():
    from swarmgauge.plans.plan import build_plan

    data = yaml.safe_load((K8S_DIR / "base" / "configmap.yaml").read_text())["data"]
    plan = build_plan(yaml.safe_load(data["plan.yaml"]), source="configmap")
    assert [stage.users for stage in plan.stages] == [1, 4, 16, 64]
    compile(data["locustfile.py"], "locustfile.py", "exec")


PROFILE_ENVS = sorted((ROOT / "deploy" / "compose").glob("*.env"))


@pytest.mark.parametrize("env_file", PROFILE_ENVS, ids=[p.stem for p in PROFILE_ENVS])
def test_each_profile_env_names_its_profile_locustfile_and_plan(env_file: Path):
    values = dict(line.split("=", 1) for line in env_file.read_text().splitlines() if line and not line.startswith("#"))
    services = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]
    assert values["COMPOSE_PROFILES"] == env_file.stem
    assert any(env_file.stem in s.get("profiles", []) for s in services.values())
    assert (ROOT / values["LOCUST_LOCUSTFILE"]).is_file()
    address = values["LOCUST_HOST"].split("://")[1]
    target = services[env_file.stem]["command"]
    assert address == f"127.0.0.1:{target[target.index('--port') + 1]}", "the host is the profile's target"
    if values.get("SWARMGAUGE_PLAN"):
        assert (ROOT / "swarmgauge" / "plans" / f"{values['SWARMGAUGE_PLAN']}.yaml").is_file()
