"""What a plan replaces of what was asked is said (log and run.json) or refused (issue 28, defects 3 and 4).

A plan silently replaced the users and ramp typed in the web form (5 typed users ran the 64-user churn plan), a churn
plan built in the form ran every User class of the locustfile (closed-loop FETCH at full speed under "churn 8
sessions/s"), and ``--mcp-churn-rate`` lost to the plan's rate without a word.
"""

from __future__ import annotations

import json
import logging
import urllib.parse
import urllib.request
from types import SimpleNamespace

import pytest
from locust import User, constant, task

from swarmgauge.errors import UsageError
from swarmgauge.plans.plan import build_plan
from swarmgauge.shapes import PlanShape
from swarmgauge.shapes.open_model import OpenModel, takes_tickets, tickets
from swarmgauge.shapes.overrides import (
    refuse_paced_options,
    ticket_users_for_open_stages,
    unused_common_options,
)
from tests.listeners.sim_run import ROOT
from tests.listeners.webui_harness import run_folders, wait_until, web_locust

CHURN = {"name": "churn-8", "kind": "churn", "rate": 8, "duration": "3s", "max_users": 4}


class TicketUser(OpenModel, User):
    abstract = True


class WaitsForTickets(User):
    abstract = True
    wait_time = tickets()


class PacedUser(User):
    abstract = True
    takes_tickets = True
    paced_by_option = ("paced_rate", "--paced-rate")


class FlatOutUser(User):
    abstract = True
    wait_time = constant(0)

    @task
    def work(self) -> None:
        pass


def _environment(*classes):
    return SimpleNamespace(user_classes=list(classes), available_user_classes={c.__name__: c for c in classes})


def test_which_user_classes_take_tickets():
    assert [takes_tickets(c) for c in (TicketUser, WaitsForTickets, PacedUser, FlatOutUser)] == [
        True,
        True,
        True,
        False,
    ]


def test_typed_users_and_ramp_that_a_plan_replaces_are_recorded():
    plan = build_plan(CHURN, source="churn.yaml")
    unused_common_options(plan, SimpleNamespace(num_users=5, spawn_rate=1.0))
    assert [(o["option"], o["given"]) for o in plan.overrides] == [("-u/--users", 5), ("-r/--spawn-rate", 1.0)]
    assert "-u/--users 5 (the web form's Number of users) is not used: plan 'churn-8'" in plan.overrides[0]["message"]
    assert plan.summary()["overrides"] == plan.overrides


def test_a_headless_run_names_the_replaced_option_without_a_web_form():
    plan = build_plan(CHURN, source="churn.yaml")
    unused_common_options(plan, SimpleNamespace(num_users=8, spawn_rate=None, headless=True))
    assert [o["message"] for o in plan.overrides] == [
        "-u/--users 8 is not used: plan 'churn-8' sets each step's users (up to 4)"
    ]


def test_users_and_ramp_the_run_uses_are_no_override():
    fallback = PlanShape().fallback_plan(SimpleNamespace(num_users=5, run_time=None, spawn_rate=1.0))
    unused_common_options(fallback, SimpleNamespace(num_users=5, spawn_rate=1.0))
    assert fallback.overrides == []
    plan = build_plan(CHURN, source="churn.yaml")
    unused_common_options(plan, SimpleNamespace(num_users=None, spawn_rate=None))
    assert plan.overrides == []


def test_a_rate_step_without_user_classes_runs_only_the_users_that_take_tickets():
    plan = build_plan(CHURN, source="form")
    ticket_users_for_open_stages(plan, _environment(TicketUser, FlatOutUser))
    assert plan.stages[0].user_classes == ("TicketUser",)
    assert plan.overrides[0]["given"] == ["FlatOutUser"]
    assert "run only the User classes that take tickets (TicketUser)" in plan.overrides[0]["message"]


@pytest.mark.parametrize("classes", [(TicketUser, WaitsForTickets), (FlatOutUser,)])
def test_a_rate_step_keeps_its_users_when_there_is_no_choice_to_make(classes):
    plan = build_plan(CHURN, source="form")
    ticket_users_for_open_stages(plan, _environment(*classes))
    assert plan.stages[0].user_classes is None and plan.overrides == []


def test_a_rate_step_keeps_the_user_classes_the_plan_names():
    plan = build_plan({**CHURN, "user_classes": ["FlatOutUser"]}, source="form")
    ticket_users_for_open_stages(plan, _environment(TicketUser, FlatOutUser))
    assert plan.stages[0].user_classes == ("FlatOutUser",) and plan.overrides == []


def test_a_users_own_rate_option_under_a_plans_rate_step_is_refused_unless_the_plan_took_it():
    environment = _environment(PacedUser)
    plan = build_plan(CHURN, source="form")
    with pytest.raises(UsageError, match=r"--paced-rate 10 cannot apply: step 'churn 8 sessions/s' .* runs PacedUser"):
        refuse_paced_options(plan, environment, SimpleNamespace(paced_rate=10.0))
    refuse_paced_options(plan, environment, SimpleNamespace(paced_rate=None))
    plan.overrides.append({"option": "--paced-rate", "given": 10.0, "message": "taken"})
    refuse_paced_options(plan, environment, SimpleNamespace(paced_rate=10.0))
    closed = build_plan({"kind": "step_ramp", "steps": [1], "step_time": "2s"})
    refuse_paced_options(closed, environment, SimpleNamespace(paced_rate=10.0))  # its own pacer runs at the option


def test_the_shape_logs_what_its_plan_replaced(caplog):
    shape = PlanShape()
    options = {"plan": None, "steps": "2,4", "step_time": "2s", "num_users": 5, "spawn_rate": None}
    shape.runner = SimpleNamespace(environment=SimpleNamespace(parsed_options=SimpleNamespace(**options)))
    with caplog.at_level(logging.WARNING, logger="swarmgauge.shapes"):
        summary = shape.plan_summary()
    assert [o["option"] for o in summary["overrides"]] == ["-u/--users"]
    assert [r.getMessage() for r in caplog.records] == [summary["overrides"][0]["message"]]


# --- the web form, posted to Locust's /swarm as the page does ----------------------------------------------------
MCP_CHURN = ROOT / "locustfiles" / "mcp_churn.py"
WAIT_SECONDS = 60.0


def _post_form(url: str, fields: dict[str, str]) -> dict:
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(url + "/swarm", data=data), timeout=30) as answer:
        return json.loads(answer.read())


def _run_json(parent, count: int, *, final: bool) -> dict:
    def ready():
        folders = run_folders(parent)
        if len(folders) < count or not (folders[count - 1] / "run.json").exists():
            return None
        doc = json.loads((folders[count - 1] / "run.json").read_text())
        return doc if not final or "exit_code" in doc else None

    return wait_until(ready, WAIT_SECONDS, f"run {count}'s run.json")


@pytest.mark.integration
@pytest.mark.timeout(240)
def test_the_web_form_says_what_the_plan_replaced_and_a_churn_plan_runs_only_the_churn_users(tmp_path):
    runs = tmp_path / "runs"
    with web_locust(MCP_CHURN, "--run-dir", str(runs), "--stop-timeout", "2", log_dir=tmp_path) as web:
        # the defaults' plan with 5 typed users and a typed churn rate: the rate wins, the users do not, both said
        answer = _post_form(web.url, {"user_count": "5", "spawn_rate": "1", "mcp_churn_rate": "10", "plan": ""})
        assert answer["success"], answer
        first = _run_json(runs, 1, final=False)
        urllib.request.urlopen(urllib.request.Request(web.url + "/stop", data=b""), timeout=30).close()
        _run_json(runs, 1, final=True)
        given = {o["option"]: o["given"] for o in first["plan"]["overrides"]}
        assert given == {"--mcp-churn-rate": 10.0, "-u/--users": 5, "-r/--spawn-rate": 1.0}
        assert [s["rate"] for s in first["plan"]["stages"]] == [10.0]
        assert "-u/--users 5 (the web form's Number of users) is not used: plan 'mcp-churn'" in web.output()
        assert "--mcp-churn-rate 10 replaces the 5 sessions/s of plan 'mcp-churn'" in web.output()
        # a churn plan built in the form: only the class that takes tickets runs under its rate
        fields = {"user_count": "5", "spawn_rate": "1", "mcp_churn_rate": "", "plan": "", "rate": "8"}
        answer = _post_form(web.url, {**fields, "shape_kind": "churn", "plan_duration": "2s", "max_users": "8"})
        assert answer["success"], answer
        second = _run_json(runs, 2, final=True)
    assert second["plan"]["stages"][0]["user_classes"] == ["MCPChurnUser"]
    assert second["user_classes"] == ["MCPChurnUser"]
    assert second["plan"]["overrides"][0]["option"] == "user_classes"


@pytest.mark.integration
@pytest.mark.timeout(120)
def test_a_churn_rate_typed_beside_a_plan_with_its_own_rate_refuses_the_start(tmp_path):
    with web_locust(MCP_CHURN, "--run-dir", str(tmp_path / "runs"), log_dir=tmp_path) as web:
        fields = {"user_count": "5", "spawn_rate": "1", "mcp_churn_rate": "10", "plan": "mcp-churn"}
        answer = _post_form(web.url, fields)
        assert not answer["success"]
        assert answer["message"].startswith("swarmgauge: --mcp-churn-rate 10 cannot apply: step 'churn 5 sessions/s'")
        assert run_folders(tmp_path / "runs") == []
