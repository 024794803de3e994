"""swarmgauge in Locust's web UI: the start form, one run folder per start -> stop, a live tab, no secrets shown.

- **Loopback by default.** ``--web-host`` defaults to 127.0.0.1 (Locust's start-up line and ``--help`` say so); give
  ``--web-host 0.0.0.0`` (or ``*``) to listen on every interface, as the compose master does inside its container.
- **The form.** swarmgauge's options are read from the form here, with each option's own type (lists split on
  commas, ticks as booleans, empty = the option's default), before Locust's handler sees the form; a bad value
  answers START with one line naming the option. An option that code set at start-up (an embedded target switching
  ``--mark-insecure`` on) keeps that value whatever the form says. Secret options are shown empty and an empty
  secret keeps its value.
- **One run per start.** Each START rebuilds the shape's plan from the form and starts a fresh run (new folder under
  ``--run-dir``, fresh per-step statistics and SLO verdicts; Locust clears its own stats). STOP, or the plan's end,
  closes the run (:mod:`listeners.webui_close`) through the steps of a quit, in their order, less the process's:
  the workers' last figures are waited for, then ``resources.csv``, ``steps.csv``, ``slo.json``, Locust's CSVs,
  ``run.json`` and the report are written into its folder; the embedded targets stay for the next START.
- **EDIT.** With no plan in effect the form drives the users and each count it sets is a step of its own; with a plan
  the EDIT dialog says above its fields that the plan drives them (``swarmgauge_edit`` in ``/stats/requests``)
  and an EDIT is refused with that line, or takes the plan over when its Custom parameters empty Steps, Plan and Rate
  (:mod:`listeners.form_steps`). A STOP before the plan's end is marked cut short; every closed run records the
  headless command that repeats it (:mod:`listeners.repeat_command`).
- **The tab.** Locust's UI gets a "swarmgauge" tab (the live per-step table: a row per request type and name, and
  each step's Aggregated row, counts only when the step mixes request types); ``/swarmgauge/`` is the full live view
  (steps, SLO verdicts in colour, memory chart with slope, lost workers, the closed run's report), fed by
  ``/swarmgauge/api/live``; ``/swarmgauge/metrics`` is the Prometheus text (:mod:`listeners.prom_export`).
- **The page's state.** Locust's page shows the start form on ``ready`` and stops polling outside spawning/running;
  a start under way and a stop winding down are told apart from those (:func:`page_state`), so a page opened or
  reloaded at any moment of a run shows the running view and the tab, and STOP always ends on NEW.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from locust import events
from locust.env import Environment
from locust.runners import (
    STATE_CLEANUP,
    STATE_RUNNING,
    STATE_SPAWNING,
    STATE_STOPPING,
    WorkerRunner,
)

from swarmgauge.core import locust_compat
from swarmgauge.core.run_context import RunContext
from swarmgauge.errors import UsageError
from swarmgauge.listeners import (
    feeder_plan,
    form_steps,
    live,
    prom_export,
    run_redaction,
    rundir,
    slo,
    slo_abort,
    steps,
    webui_close,
    webui_fields,
)
from swarmgauge.listeners.webui_form import FormError, apply_common_fields, apply_form, scrub_template_args

logger = logging.getLogger("swarmgauge.webui")

LOOPBACK = "127.0.0.1"
TAB_KEY = "swarmgauge"
TAB_COLUMNS = [
    ("step", "Step"),
    ("label", "Label"),
    ("users", "Users"),
    ("target_rate", "Target rate"),
    ("request", "Request"),
    ("requests", "Requests"),
    ("failures", "Failures"),
    ("rps", "Throughput"),
    ("p50_ms", "p50"),
    ("p90_ms", "p90"),
    ("p99_ms", "p99"),
    ("dropped", "Dropped"),
    ("generator_bound", "Generator-bound"),
    ("slo", "SLO"),
]
RATE_COLUMNS = ("rps", "p50_ms", "p90_ms", "p99_ms")
NOT_A_RATE = "-"
PAGE = Path(__file__).with_name("webui_page.html")
FORM_SCRIPT = Path(__file__).with_name("webui_form.js")
SCRIPT_TAG = '<script src="./swarmgauge/form.js" defer></script>'
RUN_SCOPE_STEP = "run"


WEB_HOST_HELP = (
    f"Host to bind the web interface to. Defaults to {LOOPBACK} (loopback only, swarmgauge's default); "
    "0.0.0.0 or '*' for all interfaces"
)


CLASS_PICKER_HELP = (
    "Pick the User classes to run in the web UI's start form (on by default with swarmgauge: run.json lists the "
    "classes that took part); a plan stage's user_classes still picks its own"
)


@events.init_command_line_parser.add_listener
def _loopback_by_default(parser: Any) -> None:
    """Loopback unless asked otherwise, and ``--help`` saying so: Locust's own text says "Defaults to '*'".
    The class picker is on: a swarmgauge locustfile holds several Users and the form is where one picks them."""
    parser.set_defaults(web_host=LOOPBACK, class_picker=True)
    locust_compat.set_option_help(parser, "--web-host", WEB_HOST_HELP)
    locust_compat.set_option_help(parser, "--class-picker", CLASS_PICKER_HELP)


# -- one run per start ---------------------------------------------------------------------------------------------
def start_fresh_run(environment: Environment) -> None:
    """Before a START: a new run folder, fresh per-step state and verdicts, and the plan rebuilt from the options."""
    webui_close.finish_close(environment)
    steps.reset(environment)
    slo.clear_verdicts(environment)
    slo_abort.clear_abort(environment)
    RunContext.of(environment).closed_run = None
    environment.process_exit_code = None
    form_steps.restore_shape(environment)
    rundir.open_new_run(environment)
    shape = getattr(environment, "shape_class", None)
    if shape is not None and callable(getattr(shape, "restart", None)):
        shape.runner = environment.runner
        shape.restart()
        shape.check_stage_classes()  # the plan, rebuilt; a class the picker left out stops the START with its reason
    feeder_plan.take_plan_feeder(environment)  # the form may name another plan: its feeder, or none
    slo.validate(environment)
    slo_abort.validate_abort(environment)


# -- what Locust's page is told ------------------------------------------------------------------------------------
def page_state(environment: Environment) -> str | None:
    """The state Locust's page is given (its template args and ``/stats/requests``).

    The page polls only while it reads spawning or running, and offers NEW only on stopped. A start under way reads
    spawning (:func:`live.run_state`). A poll that lands while a STOP winds the users down (``cleanup`` on a local
    run, ``stopping`` on a master: seconds when users finish their last requests) left the page on "Loading" for good,
    so those read as running until the runner says stopped.
    """
    state = live.run_state(environment)
    return STATE_RUNNING if state in (STATE_CLEANUP, STATE_STOPPING) else state


def edit_dialog(environment: Environment) -> dict[str, Any] | None:
    """What the EDIT dialog says above its fields while a plan drives the users (None otherwise), and the fields
    whose emptying lets UPDATE take the plan over (none: UPDATE stays off). Locust's dialog closes on UPDATE, so a
    refusal's message alone was never seen there; the notice is the refusal's text."""
    notice = form_steps.edit_notice(environment)
    if notice is None or page_state(environment) not in (STATE_RUNNING, STATE_SPAWNING):
        return None
    fields = form_steps.TAKE_OVER_FIELDS if form_steps.take_over_offered(environment) else ()
    return {"notice": notice, "take_over_fields": list(fields)}


# -- routes --------------------------------------------------------------------------------------------------------
def _tab_rows(environment: Environment) -> list[dict[str, Any]]:
    """The live per-step table: a row per request type and name, as ``/swarmgauge/``, and each step's Aggregated row.

    The tab once showed only the Aggregated rows, whose rate and percentiles are empty for a step of mixed request
    types (Mark's FETCH + LIST + LOOKUP), so a run at 1,000 req/s read as blanks. Such a row now says it is counts
    only. Figures read as the report writes them (``546 req/s``, ``20.4 ms``); each step's SLO verdicts sit on its
    Aggregated row, and each run-scope SLO (the default scope) gets a row of its own at the end, with its figures in
    the threshold's unit. No ``name`` key: Locust's table sorts by it, and the rows keep the server's order.
    """
    view = live.snapshot(environment)
    per_step: dict[int, list[str]] = {}
    run_scope = []
    for verdict in view["slo"]:
        for entry in verdict.get("steps") or []:
            per_step.setdefault(entry["step"], []).append(f"{verdict['expr']}: {entry['text']}")
        if not verdict.get("steps"):
            run_scope.append(verdict)
    rows = []
    for row in view["steps"]:
        shown = {key: row.get(key, "") for key, _ in TAB_COLUMNS}
        shown.update({key: row["shown"][key] for key in (*RATE_COLUMNS, "target_rate")})
        shown["request"] = row["title"]
        shown["generator_bound"] = "yes" if row.get("generator_bound") else ""
        shown["slo"] = "; ".join(per_step.get(row["step"], [])) if row["name"] == "Aggregated" else ""
        if row.get("counts_only"):
            shown.update({key: NOT_A_RATE for key in RATE_COLUMNS})
        rows.append(shown)
    for verdict in run_scope:
        row = {key: "" for key, _ in TAB_COLUMNS}
        row.update(step=RUN_SCOPE_STEP, label="whole run", request=f"SLO {verdict['expr']}", slo=verdict["text"])
        rows.append(row)
    return rows


def _form_doc(environment: Environment, web_ui: Any) -> dict[str, Any]:
    """What the form's script needs: each field's label, flag and help, and the plan START would run now."""
    picker = bool(web_ui.userclass_picker_is_active)
    doc = {"fields": webui_fields.field_docs(), "preview": webui_fields.plan_preview(environment, None, picker)}
    return run_redaction.redact_tree(doc, environment)


def _form_script_tags(environment: Environment, web_ui: Any) -> str:
    """The form's script with its data inline, so the form is labelled as it first renders, not a fetch later (a
    click landing while labels and help lines were added could hit the field below)."""
    data = json.dumps(_form_doc(environment, web_ui)).replace("</", "<\\/")
    return f"<script>window.swarmgaugeForm = {data};</script>\n{SCRIPT_TAG}"


def _install(environment: Environment, web_ui: Any) -> None:
    from flask import Response, jsonify, request, send_from_directory

    app = web_ui.app
    protect = web_ui.auth_required_if_enabled
    web_ui.template_args["extended_tabs"] = [{"title": "swarmgauge", "key": TAB_KEY}]
    web_ui.template_args["extended_tables"] = [
        {"key": TAB_KEY, "structure": [{"key": key, "title": title} for key, title in TAB_COLUMNS]}
    ]
    web_ui.template_args["extended_csv_files"] = [
        {"href": "./swarmgauge/", "title": "swarmgauge live view: steps, SLOs, memory chart, report"}
    ]
    original_update = web_ui.update_template_args

    def update_template_args() -> None:
        original_update()
        web_ui.template_args["state"] = page_state(environment)
        scrub_template_args(environment, web_ui.template_args)
        extra = web_ui.template_args.get("extra_options") or {}
        web_ui.template_args["extra_options"] = webui_fields.ordered_options(extra)

    web_ui.update_template_args = update_template_args
    # the page's template args keep their order (Jinja's tojson sorts keys): the form shows swarmgauge's fields in
    # their groups' order, not alphabetically
    app.jinja_env.policies["json.dumps_kwargs"] = {"sort_keys": False}

    @app.before_request
    def _swarm_form() -> Any:
        if (request.endpoint or "").rsplit(".", 1)[-1] != "swarm" or request.method != "POST":
            return None
        running = environment.runner is not None and environment.runner.state in (STATE_RUNNING, STATE_SPAWNING)
        refusal = form_steps.refuse_edit(environment, request.form) if running else None
        if refusal:
            logger.warning("%s", refusal)
            return jsonify({"success": False, "message": refusal, "host": environment.host})
        try:
            request.form = apply_form(environment, request.form)
            apply_common_fields(environment, request.form)
            if not running and web_ui.userclass_picker_is_active:
                request.form = webui_fields.pick_classes(environment, request.form)
            if not running:
                webui_fields.check_host(environment, request.form)
            if not running:
                start_fresh_run(environment)
                form_steps.take_control(environment)
            else:
                form_steps.take_over(environment)
            if web_ui.userclass_picker_is_active:  # after take_control: a run with no plan names no shape
                request.form = webui_fields.keep_shape(environment, request.form)
            if form_steps.form_driven(environment):
                form_steps.announce_form_step(environment, request.form)
        except (FormError, UsageError) as exc:
            logger.error("swarmgauge: %s", exc)
            return jsonify({"success": False, "message": f"swarmgauge: {exc}", "host": environment.host})
        return None

    @app.after_request
    def _extend_stats(response: Any) -> Any:
        if request.path.rstrip("/").endswith("/stats/requests") and response.is_json:
            doc = response.get_json()
            doc["extended_stats"] = [{"key": TAB_KEY, "data": _tab_rows(environment)}]
            doc["state"] = page_state(environment)
            doc["swarmgauge_edit"] = edit_dialog(environment)
            response.set_data(json.dumps(doc))
        elif (
            (request.endpoint or "").rsplit(".", 1)[-1] == "index"
            and response.mimetype == "text/html"
            and response.status_code == 200
        ):
            page = response.get_data(as_text=True)
            if "</body>" in page and SCRIPT_TAG not in page:
                response.set_data(page.replace("</body>", _form_script_tags(environment, web_ui) + "\n</body>", 1))
        return response

    @app.route("/swarmgauge/form.js")
    @protect
    def swarmgauge_form_script() -> Any:
        return Response(FORM_SCRIPT.read_text(), mimetype="text/javascript")

    @app.route("/swarmgauge/api/form")
    @protect
    def swarmgauge_form() -> Any:
        return jsonify(_form_doc(environment, web_ui))

    @app.route("/swarmgauge/api/plan", methods=["POST"])
    @protect
    def swarmgauge_plan() -> Any:
        picker = bool(web_ui.userclass_picker_is_active)
        return jsonify(
            run_redaction.redact_tree(webui_fields.plan_preview(environment, request.form, picker), environment)
        )

    @app.route("/swarmgauge/")
    @protect
    def swarmgauge_page() -> Any:
        return Response(PAGE.read_text(), mimetype="text/html")

    @app.route("/swarmgauge/api/live")
    @protect
    def swarmgauge_live() -> Any:
        return jsonify(live.snapshot(environment))

    @app.route("/swarmgauge/metrics")
    @protect
    def swarmgauge_metrics() -> Any:
        return Response(prom_export.exposition(environment), mimetype=prom_export.CONTENT_TYPE)

    @app.route("/swarmgauge/runs/<name>/<path:filename>")
    @protect
    def swarmgauge_run_file(name: str, filename: str) -> Any:
        parent = rundir.parent_dir(environment)
        if parent is None or filename not in ("report.html", "report.md", "steps.csv", "slo.json", "run.json"):
            return Response("not found\n", status=404, mimetype="text/plain")
        return send_from_directory(parent.resolve() / name, filename)


@events.init.add_listener
def _on_init(environment: Environment, web_ui: Any = None, **_kwargs: Any) -> None:
    if isinstance(environment.runner, WorkerRunner) or web_ui is None:
        return
    _install(environment, web_ui)
    environment.events.test_stop.add_listener(lambda **kw: webui_close.begin_close(environment))
