"""The two Kubernetes modes, checked offline: the headless master is a Job whose results stay on a claim that the
README's copy-out reaches; the web-UI master and the workers are Deployments; both overlays share one base."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from tests.deploy.test_manifests import K8S_DIR, ROOT


def _documents(relative: str) -> list[dict]:
    return list(yaml.safe_load_all((K8S_DIR / relative).read_text()))


def _kustomized(folder: Path) -> list[dict]:
    """What `kubectl apply -k folder` applies: the resources of the kustomization, bases followed (no patches)."""
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    documents = []
    for resource in kustomization["resources"]:
        path = (folder / resource).resolve()
        documents += _kustomized(path) if path.is_dir() else list(yaml.safe_load_all(path.read_text()))
    return documents


def _kinds(folder: str) -> set[tuple[str, str]]:
    return {(d["kind"], d["metadata"]["name"]) for d in _kustomized(K8S_DIR / folder)}


def _container_env(container: dict) -> dict[str, str]:
    return {e["name"]: e.get("value") for e in container.get("env", [])}


def test_overlays_apply_the_master_as_a_deployment_or_as_a_job_beside_the_same_base():
    shared = {
        ("ConfigMap", "swarmgauge-scenario"),
        ("Service", "swarmgauge-master"),
        ("Deployment", "swarmgauge-worker"),
    }
    assert _kinds("web") == shared | {("Deployment", "swarmgauge-master")}
    assert _kinds("headless") == shared | {("Job", "swarmgauge-master"), ("PersistentVolumeClaim", "swarmgauge-runs")}
    for folder in ("web", "headless"):
        names = [(d["kind"], d["metadata"]["name"]) for d in _kustomized(K8S_DIR / folder)]
        assert len(names) == len(set(names)), f"{folder}: a resource twice"


def test_the_headless_master_is_a_job_that_never_restarts_and_writes_to_the_claim():
    [job] = _documents("headless/master-job.yaml")
    [claim] = _documents("headless/runs-pvc.yaml")
    spec = job["spec"]["template"]["spec"]
    assert job["spec"]["backoffLimit"] == 0 and spec["restartPolicy"] == "Never"
    assert job["spec"]["activeDeadlineSeconds"] > 0, "bounded in time"
    [container] = spec["containers"]
    env = _container_env(container)
    assert env["LOCUST_HEADLESS"] == "true" and env["SWARMGAUGE_RUN_DIR"].startswith("/runs/")
    [workers] = _documents("base/worker.yaml")
    assert env["LOCUST_EXPECT_WORKERS"] == str(workers["spec"]["replicas"])
    runs = next(v for v in spec["volumes"] if v["name"] == "runs")
    assert runs["persistentVolumeClaim"]["claimName"] == claim["metadata"]["name"]
    assert {"name": "runs", "mountPath": "/runs"} in container["volumeMounts"]
    assert spec["securityContext"]["fsGroup"] == spec["securityContext"]["runAsUser"], "the claim is writable"


def test_the_service_selects_the_master_pod_of_either_mode():
    [service] = _documents("base/service.yaml")
    [job] = _documents("headless/master-job.yaml")
    [deployment] = _documents("web/master.yaml")
    for labels in (job["spec"]["template"]["metadata"]["labels"], deployment["spec"]["template"]["metadata"]["labels"]):
        assert service["spec"]["selector"].items() <= labels.items()
    [workers] = _documents("base/worker.yaml")
    [worker] = workers["spec"]["template"]["spec"]["containers"]
    assert worker["args"][worker["args"].index("--master-host") + 1] == service["metadata"]["name"]


def test_the_web_master_is_a_deployment_with_its_ui():
    [deployment] = _documents("web/master.yaml")
    [container] = deployment["spec"]["template"]["spec"]["containers"]
    assert _container_env(container).get("LOCUST_HEADLESS") in (None, "false")
    assert {"name": "web", "containerPort": 8089} in container["ports"]


def test_the_results_pod_mounts_the_claim_read_only_and_ends_by_itself():
    [pod] = _documents("headless/results-pod.yaml")
    [claim] = _documents("headless/runs-pvc.yaml")
    [volume] = pod["spec"]["volumes"]
    assert volume["persistentVolumeClaim"] == {"claimName": claim["metadata"]["name"], "readOnly": True}
    [container] = pod["spec"]["containers"]
    assert container["command"][0] == "sleep" and int(container["command"][1]) <= 3600, "bounded"


def test_the_readme_copy_out_names_the_manifests_it_uses():
    """The documented headless commands: the Job, the results pod and the claim's folder are the manifests' own."""
    text = (ROOT / "README.md").read_text()
    block = re.search(r"```sh\n(kubectl -n load apply -k deploy/k8s/headless/.*?)```", text, re.DOTALL).group(1)
    [job] = _documents("headless/master-job.yaml")
    [pod] = _documents("headless/results-pod.yaml")
    run_dir = _container_env(job["spec"]["template"]["spec"]["containers"][0])["SWARMGAUGE_RUN_DIR"]
    assert f"job/{job['metadata']['name']}" in block and f"pod/{pod['metadata']['name']}" in block
    assert f"-C {run_dir}/ -cf - ." in block and "swarmgauge report runs/latest" in block
    for path in re.findall(r"deploy/k8s/[\w/.-]+", block):
        assert (ROOT / path).exists(), path
