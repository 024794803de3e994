"""The EDIT dialog of a run (issue 29): with a plan in effect it says, above its fields, that the plan drives the
users and how to take over, in the words the server refuses an EDIT with, and UPDATE waits until Steps, Plan and Rate
are emptied; without a plan it says nothing.

Set ``SWARMGAUGE_TEST_SHOTS=/some/dir`` to keep screenshots of the dialog with and without the notice.
"""

from __future__ import annotations

from typing import Any

import pytest

from swarmgauge.listeners import form_steps
from tests.listeners.test_webui import RUN_SECONDS, closed_folders, start_from_form
from tests.listeners.test_webui_edit import (
    FormValues,
    form_environment,
    keep_shot,
    open_edit_dialog,
    post,
    ramp_in_browser,
)
from tests.listeners.webui_harness import wait_until


@pytest.mark.integration
def test_the_edit_dialog_says_the_plan_drives_the_users_and_says_nothing_without_a_plan(tmp_path):
    """Locust's dialog closes on UPDATE, so the refusal's message alone was never seen there."""
    run_dir = tmp_path / "runs"
    with ramp_in_browser(tmp_path, run_dir) as (target, web, page):
        start_from_form(page, web.url, {"steps": "1,3", "stepTime": "60s"})
        dialog = open_edit_dialog(page)
        notice = dialog.locator("#sg-edit-notice")
        notice.wait_for()
        said = notice.inner_text()
        assert said.startswith("The plan 'step_ramp' drives the users (stage 1 of 2, 00:")
        assert " of 02:00): UPDATE cannot change them. " in said
        assert "To stop the plan here and set the users yourself, empty Steps, Plan and Rate under Custom " in said
        notice_box, users_box = notice.bounding_box(), page.locator('input[name="userCount"]').bounding_box()
        assert notice_box and users_box and notice_box["y"] + notice_box["height"] <= users_box["y"]  # above
        update = page.get_by_role("button", name="UPDATE")
        assert update.is_disabled()
        keep_shot(page, "8-edit-dialog-plan-drives.png")
        told = web.get_json("/stats/requests")["swarmgauge_edit"]
        assert told["take_over_fields"] == ["steps", "plan", "rate"]
        refused = post(web.url, "/swarm", {"user_count": 5, "spawn_rate": 10, "host": target.url})["message"]
        assert refused.startswith("swarmgauge: The plan 'step_ramp' drives the users (stage 1 of 2, ")
        assert refused.split("): ")[1] == said.split("): ")[1] == told["notice"].split("): ")[1]  # one text
        page.get_by_text("Custom parameters", exact=True).click()
        page.locator('input[name="steps"]').fill("")
        assert update.is_enabled()  # emptied: UPDATE would take the plan over
        page.locator('input[name="steps"]').fill("1,3")
        assert update.is_disabled()
        page.keyboard.press("Escape")
        assert post(web.url, "/stop", {})["success"] is True
        closed_folders(run_dir, 1)
        start_from_form(page, web.url, {"steps": "", "stepTime": "", "userCount": "2", "spawnRate": "10"})
        wait_until(lambda: web.get_json("/stats/requests")["user_count"] == 2, RUN_SECONDS, "2 users")
        dialog = open_edit_dialog(page)
        assert dialog.locator("#sg-edit-notice").count() == 0 and "drives the users" not in dialog.inner_text()
        assert web.get_json("/stats/requests")["swarmgauge_edit"] is None
        assert page.get_by_role("button", name="UPDATE").is_enabled()
        keep_shot(page, "9-edit-dialog-no-plan.png")


class _RunningPlan:
    """A shape 70 s into a plan of two 60 s stages, the way form_steps reads one."""

    def __init__(self, class_plan: bool = False) -> None:
        self.class_plan = class_plan

    def plan_summary(self) -> dict[str, Any]:
        return {"name": "step_ramp", "stages": [{"duration": 60}, {"duration": 60}]}

    def get_run_time(self) -> float:
        return 70.0

    def plan_in_effect_for(self, values: Any) -> bool:
        return bool(values.get("steps"))

    def class_plan_doc(self) -> dict[str, Any]:
        return {"kind": "stages"} if self.class_plan else {}


def test_the_edit_dialogs_notice_is_the_refusals_text_and_says_where_the_plan_is():
    environment = form_environment()
    environment.shape_class = _RunningPlan()
    form_steps.FormState.of(environment).started = True
    notice = form_steps.edit_notice(environment)
    assert notice is not None and notice.startswith(
        "The plan 'step_ramp' drives the users (stage 2 of 2, 01:10 of 02:00): UPDATE cannot change them. To stop"
    )
    assert form_steps.refuse_edit(environment, FormValues(steps="1,3")) == f"swarmgauge: {notice}"
    assert form_steps.refuse_edit(environment, FormValues(steps="")) is None  # emptied: the EDIT takes the plan over
    environment.shape_class = _RunningPlan(class_plan=True)
    assert not form_steps.take_over_offered(environment)
    assert "STOP, then START" in (form_steps.edit_notice(environment) or "")
    form_steps.FormState.of(environment).driven = True
    assert form_steps.edit_notice(environment) is None and form_steps.refuse_edit(environment, FormValues()) is None
