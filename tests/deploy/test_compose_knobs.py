"""The knobs a CI run needs reach the containers, and the file's defaults name what a new user can run."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.deploy.compose_local import ROOT, interpolate, load_compose, resolve
from tests.deploy.engine import ReadmeBlockError, engine_unavailable, readme_commands

CI_SHELL = {
    "SWARMGAUGE_PLAN": "",
    "SWARMGAUGE_STEPS": "2,4",
    "SWARMGAUGE_STEP_TIME": "4s",
    "SWARMGAUGE_WARMUP": "1s",
    "LOCUST_USER_CLASSES": "FetchUser",
    "SWARMGAUGE_RUN_NAME": "ci",
}


def test_ci_knobs_reach_master_and_workers(tmp_path: Path):
    document = load_compose()
    master = resolve(document, "master", CI_SHELL, {"/runs": tmp_path}).environment
    worker = resolve(document, "worker", CI_SHELL, {"/runs": tmp_path}).environment
    for environment in (master, worker):
        assert environment["SWARMGAUGE_PLAN"] == "", "an empty plan stays empty, so the steps make the plan"
        assert environment["SWARMGAUGE_STEPS"] == "2,4" and environment["SWARMGAUGE_STEP_TIME"] == "4s"
        assert environment["SWARMGAUGE_WARMUP"] == "1s" and environment["LOCUST_USER_CLASSES"] == "FetchUser"
    assert master["SWARMGAUGE_RUN_DIR"] == f"{tmp_path}/ci"


def test_the_plan_defaults_to_the_read_ramp_and_empty_knobs_stay_out_of_the_way():
    master = resolve(load_compose(), "master", {}, {}).environment
    assert master["SWARMGAUGE_PLAN"] == "demarkus-reads"
    assert all(
        master[name] == ""
        for name in ("SWARMGAUGE_STEPS", "SWARMGAUGE_STEP_TIME", "SWARMGAUGE_WARMUP", "LOCUST_USER_CLASSES")
    )


def test_the_default_plan_runs_the_fetch_user_only():
    """The read profile's plan says "QUIC FETCH, pooled": its user_classes name FetchUser, which the locustfile has."""
    from swarmgauge.plans.plan import load_plan_file

    master = resolve(load_compose(), "master", {}, {}).environment
    plan = load_plan_file(master["SWARMGAUGE_PLAN"])
    assert {stage.user_classes for stage in plan.stages} == {("FetchUser",)}
    locustfile = (ROOT / master["LOCUST_LOCUSTFILE"]).read_text()
    assert re.search(r"^class FetchUser\(", locustfile, re.MULTILINE)


def test_a_plans_folder_from_the_host_is_mounted_read_only_on_the_master():
    master = load_compose()["services"]["master"]
    [mount] = [volume for volume in master["volumes"] if volume.endswith(":/plans:ro")]
    assert interpolate(mount, {"SWARMGAUGE_PLANS": "/ci/plans"}) == "/ci/plans:/plans:ro"
    assert (ROOT / interpolate(mount, {}).split(":")[0]).is_dir(), "the default host folder exists in a checkout"


def test_the_master_gets_a_stop_grace_period_for_its_report():
    services = load_compose()["services"]
    grace = interpolate(services["master"]["stop_grace_period"], {})
    minutes = re.fullmatch(r"(\d+)m", grace)
    assert minutes and int(minutes.group(1)) >= 1, grace


def test_build_takes_the_base_image_and_network_as_knobs():
    build = load_compose()["x-image"]["build"]
    assert interpolate(build["args"]["BASE_IMAGE"], {}) == "python:3.12-slim"
    assert interpolate(build["network"], {}) == "default"
    assert interpolate(build["network"], {"SWARMGAUGE_BUILD_NETWORK": "host"}) == "host"
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "ARG BASE_IMAGE=python:3.12-slim" in dockerfile and "FROM ${BASE_IMAGE}" in dockerfile
    assert "<<" not in dockerfile, "no heredoc: Debian 12's engine 20.10 and the legacy builder refuse it"


def test_the_kneo_profile_runs_postgresql_15_built_without_a_registry():
    postgres = load_compose()["services"]["postgres"]
    assert interpolate(postgres["image"], {}) == "swarmgauge-postgres:15"
    assert interpolate(postgres["image"], {"SWARMGAUGE_POSTGRES_IMAGE": "postgres:15"}) == "postgres:15"
    context = ROOT / postgres["build"]["context"]
    assert "postgresql-15" in (context / "Dockerfile").read_text() and (context / "entrypoint.sh").is_file()


def test_every_knob_of_the_file_is_in_env_example():
    """Every variable the file reads has its line in .env.example, so `cp .env.example .env` shows them all."""
    text = (ROOT / "docker-compose.yml").read_text()
    used = set(re.findall(r"\$\{([A-Z_][A-Z0-9_]*)", text))
    example = {
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    }
    assert used - example == set()


def test_env_example_values_are_the_file_defaults():
    text = (ROOT / "docker-compose.yml").read_text()
    defaults = dict(re.findall(r"\$\{([A-Z_][A-Z0-9_]*):?-([^}]*)\}", text))
    example = dict(
        line.split("=", 1)
        for line in (ROOT / ".env.example").read_text().splitlines()
        if line and not line.startswith("#")
    )
    differing = {k: (v, example[k]) for k, v in defaults.items() if k in example and example[k] != v}
    assert differing == {}


def test_the_readme_blocks_the_engine_test_follows_are_there():
    build, up, copy, report, down = readme_commands("A CI run", "docker compose build")
    assert build == "docker compose build" and "--scale worker=2 --exit-code-from master" in up
    assert copy.startswith('rm -rf "runs/') and '/." "runs/' in copy, "replaces the folder, never nests"
    assert report.startswith(".venv/bin/swarmgauge report ") and down.endswith("down -v")
    assert readme_commands("A CI run", " up -d ")[-1] == down


def test_a_missing_readme_block_is_a_named_error():
    with pytest.raises(ReadmeBlockError, match="no heading"):
        readme_commands("No such heading", "docker")
    with pytest.raises(ReadmeBlockError, match="no sh block"):
        readme_commands("A CI run", "kubectl")


def test_without_a_docker_cli_the_engine_tests_say_why(monkeypatch):
    monkeypatch.setenv("PATH", "")
    assert "no docker CLI" in engine_unavailable()
