"""The start form's values read with each option's own type: lists, ticks, bad values named, code-set values kept,
and no secret shown in the form's defaults."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import urllib.parse
import urllib.request
from types import SimpleNamespace

import pytest
from werkzeug.datastructures import ImmutableMultiDict

from swarmgauge.listeners import webui_form
from swarmgauge.listeners.webui_form import FormError, apply_form, convert, scrub_template_args
from tests.listeners.sim_run import ROOT, sim_target
from tests.listeners.webui_harness import browser_page, web_locust

LOCUSTFILES = sorted(p.stem for p in (ROOT / "locustfiles").glob("*.py") if p.stem != "__init__")

# Run in a process of its own: importing a locustfile registers its listeners (an embedded target at init).
EVERY_BOX_SCRIPT = """
import importlib, json, sys
from types import SimpleNamespace
from locust import argument_parser
from werkzeug.datastructures import ImmutableMultiDict
from swarmgauge.listeners import webui_form

for name in sys.argv[1:]:
    importlib.import_module("swarmgauge.locustfiles." + name)
sys.argv = ["locust"]
shown = argument_parser.ui_extra_args_dict()
options = webui_form.web_options()
found = {}
for dest in sorted(d for d, a in options.items() if a.nargs == 0 and d in shown):
    action = options[dest]
    flipped = not action.default
    cases = {  # name: (command line, value code set at start-up or None, what the form sends)
        "set_by_code_kept": (["locust"], flipped, action.default),
        "set_by_user_followed": (["locust", action.option_strings[-1]], None, action.default),
        "default_followed": (["locust"], None, flipped),
    }
    found[dest] = {"default": action.default}
    for case, (argv, code_set, sent) in cases.items():
        sys.argv = argv
        parsed = webui_form._parser().parse_args()
        if code_set is not None:
            setattr(parsed, dest, code_set)
        webui_form.apply_form(SimpleNamespace(parsed_options=parsed), ImmutableMultiDict([(dest, str(sent).lower())]))
        found[dest][case] = getattr(parsed, dest)
print(json.dumps(found))
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sample", action="append", default=[])
    parser.add_argument("--sample-interval", type=float, default=5.0)
    parser.add_argument("--sample-on", choices=("master", "workers"), default="master")
    parser.add_argument("--mark-insecure", action="store_true", default=False)
    parser.add_argument("--steps", default=None)
    parser.add_argument("--mark-token", default="")
    for action in parser._actions:
        action.is_secret = action.dest == "mark_token"  # as Locust's add_argument(is_secret=True) marks it
    return parser


def _action(parser: argparse.ArgumentParser, dest: str) -> argparse.Action:
    return next(a for a in parser._actions if a.dest == dest)


def test_an_empty_list_option_keeps_its_default_and_text_becomes_a_list():
    action = _action(_parser(), "sample")
    assert convert(action, [""], []) == []
    assert convert(action, ["psutil:pid=1, prom:http://127.0.0.1:1/metrics"], []) == [
        "psutil:pid=1",
        "prom:http://127.0.0.1:1/metrics",
    ]


def test_typed_values_ticks_and_empty_fields():
    parser = _parser()
    assert convert(_action(parser, "sample_interval"), ["2.5"], 5.0) == 2.5
    assert convert(_action(parser, "sample_interval"), [""], 1.0) == 5.0
    assert convert(_action(parser, "mark_insecure"), ["true"], False) is True
    assert convert(_action(parser, "mark_insecure"), ["false"], True) is False
    assert convert(_action(parser, "steps"), ["1,4"], None) == "1,4"


@pytest.mark.parametrize(
    "dest, text, named",
    [
        ("sample_interval", "banana", "--sample-interval 'banana'"),
        ("sample_on", "everywhere", "--sample-on 'everywhere'"),
    ],
)
def test_a_bad_value_is_a_form_error_naming_the_option(dest, text, named):
    with pytest.raises(FormError, match=named):
        convert(_action(_parser(), dest), [text], None)


def test_the_form_never_undoes_what_code_set_at_start_up_and_an_empty_secret_keeps_its_value(monkeypatch):
    parser = _parser()
    monkeypatch.setattr(
        webui_form, "web_options", lambda: {a.dest: a for a in parser._actions if a.option_strings and a.dest != "help"}
    )
    monkeypatch.setattr(webui_form, "_parser", lambda: parser)
    monkeypatch.setattr("sys.argv", ["locust", "--mark-token", "tok-123456"])
    options = SimpleNamespace(
        sample=[], sample_interval=5.0, sample_on="master", mark_insecure=True, steps=None, mark_token="tok-123456"
    )  # mark_insecure: an embedded target switched it on
    environment = SimpleNamespace(parsed_options=options)
    form = ImmutableMultiDict(
        [
            ("mark_insecure", "false"),
            ("sample", ""),
            ("sample_interval", "1"),
            ("steps", "1,2"),
            ("mark_token", ""),
            ("user_count", "3"),
        ]
    )
    left = apply_form(environment, form)
    assert list(left.keys()) == ["user_count"]  # Locust's own fields are left to Locust
    assert options.mark_insecure is True and options.mark_token == "tok-123456"
    assert (options.sample, options.sample_interval, options.steps) == ([], 1.0, "1,2")


def test_the_form_shows_the_values_in_use_and_no_secret():
    options = SimpleNamespace(
        sample=["psutil:pid=7"],
        mark_insecure=True,
        mark_token="tok-abcdef",
        sample_url="http://u:pw-secret@127.0.0.1/metrics",
    )
    environment = SimpleNamespace(parsed_options=options)
    args = {
        "host": "http://u:pw-secret@127.0.0.1:1",
        "extra_options": {
            "sample": {"default_value": [], "is_secret": False},
            "mark_insecure": {"default_value": False, "is_secret": False},
            "mark_token": {"default_value": "tok-abcdef", "is_secret": True},
            "sample_url": {"default_value": "x", "is_secret": False},
        },
    }
    scrub_template_args(environment, args)
    shown = {k: v["default_value"] for k, v in args["extra_options"].items()}
    assert shown == {
        "sample": "psutil:pid=7",
        "mark_insecure": True,
        "mark_token": "",
        "sample_url": "http://u:***@127.0.0.1/metrics",
    }
    assert "pw-secret" not in args["host"]


@pytest.mark.integration
def test_every_box_of_every_locustfile_keeps_what_code_set_and_follows_what_the_user_set():
    done = subprocess.run(
        [sys.executable, "-c", EVERY_BOX_SCRIPT, *LOCUSTFILES], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.strip().splitlines()[-1])
    assert {"mark_insecure", "mcp_delete", "mdk_forwarded_for", "no_report"} <= set(found)
    for dest, cases in found.items():
        flipped = not cases.pop("default")
        assert cases == {
            "set_by_code_kept": flipped,
            "set_by_user_followed": not flipped,
            "default_followed": flipped,
        }, dest


def _run_dir_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser()
    parser.add_argument("--run-dir", default=None)
    parser.add_argument("--slo-junit", default=None)
    for action in parser._actions:
        action.is_secret = False
    return parser


@pytest.mark.parametrize(
    "dest, typed, why",
    [
        ("run_dir", "{root}/../elsewhere", "outside"),
        ("run_dir", "/tmp/not-the-run-dir", "outside"),
        ("run_dir", "{root}/out-link/inside-it", "outside"),
        ("slo_junit", "{root}/out-link/junit.xml", "outside"),
        ("slo_junit", "{tmp}/junit.xml", "outside"),
    ],
)
def test_a_path_the_form_would_write_to_outside_the_launchs_run_dir_is_refused(monkeypatch, tmp_path, dest, typed, why):
    root, outside = tmp_path / "runs", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (root / "out-link").symlink_to(outside)  # a symlink inside that leads out
    parser = _run_dir_parser()
    monkeypatch.setattr(webui_form, "web_options", lambda: {a.dest: a for a in parser._actions if a.dest != "help"})
    monkeypatch.setattr(webui_form, "_parser", lambda: parser)
    monkeypatch.setattr("sys.argv", ["locust", "--run-dir", str(root)])
    options = SimpleNamespace(run_dir=str(root), slo_junit=None)
    value = typed.format(root=root, tmp=tmp_path)
    with pytest.raises(FormError, match=f"{why} {root}, the --run-dir swarmgauge was started with"):
        apply_form(SimpleNamespace(parsed_options=options), ImmutableMultiDict([(dest, value)]))
    assert options.run_dir == str(root) and options.slo_junit is None  # nothing changed


def test_the_form_may_write_inside_the_launchs_run_dir_and_nowhere_without_one(monkeypatch, tmp_path):
    root = tmp_path / "runs"
    root.mkdir()
    parser = _run_dir_parser()
    monkeypatch.setattr(webui_form, "web_options", lambda: {a.dest: a for a in parser._actions if a.dest != "help"})
    monkeypatch.setattr(webui_form, "_parser", lambda: parser)
    monkeypatch.setattr("sys.argv", ["locust", "--run-dir", str(root)])
    options = SimpleNamespace(run_dir=str(root), slo_junit=None)
    environment = SimpleNamespace(parsed_options=options)
    apply_form(environment, ImmutableMultiDict([("run_dir", f"{root}/experiment-1"), ("slo_junit", f"{root}/j.xml")]))
    assert (options.run_dir, options.slo_junit) == (f"{root}/experiment-1", f"{root}/j.xml")
    # the second START compares with the launch's --run-dir, not with the folder the first one chose
    with pytest.raises(FormError, match="outside"):
        apply_form(environment, ImmutableMultiDict([("run_dir", f"{root}/experiment-1/../../x")]))

    monkeypatch.setattr("sys.argv", ["locust"])
    unset = SimpleNamespace(parsed_options=SimpleNamespace(run_dir=None, slo_junit=None))
    with pytest.raises(FormError, match="started without one"):
        apply_form(unset, ImmutableMultiDict([("run_dir", str(root))]))


HTTP_RAMP = ROOT / "locustfiles" / "http_ramp.py"


def _post_start(url: str, fields: dict[str, str]) -> dict:
    data = urllib.parse.urlencode(fields).encode()
    with urllib.request.urlopen(urllib.request.Request(url + "/swarm", data=data), timeout=30) as answer:
        return json.loads(answer.read())


@pytest.mark.integration
def test_the_web_form_cannot_write_a_run_folder_outside_the_launchs_run_dir(tmp_path):
    runs, outside = tmp_path / "runs", tmp_path / "outside"
    runs.mkdir()
    outside.mkdir()
    (runs / "out-link").symlink_to(outside)
    with (
        sim_target("--delay", "const:2") as target,
        web_locust(HTTP_RAMP, "--host", target.url, "--run-dir", str(runs), log_dir=tmp_path) as web,
    ):
        start = {"user_count": "1", "spawn_rate": "1", "host": target.url, "steps": "1", "step_time": "1s"}
        for folder in (str(outside), f"{runs}/../outside", f"{runs}/out-link/x", "/etc/swarmgauge-test"):
            refused = _post_start(web.url, {**start, "run_dir": folder})
            assert refused["success"] is False, folder
            assert f"outside {runs}, the --run-dir swarmgauge was started with" in refused["message"], refused
        with browser_page() as page:
            page.goto(web.url + "/")
            page.wait_for_selector("form")
            if not page.locator('input[name="runDir"]').is_visible():
                page.get_by_text("Custom parameters").click()
            page.fill('input[name="runDir"]', str(outside))
            page.get_by_role("button", name="START").click()
            page.get_by_text("the --run-dir swarmgauge was started with").wait_for(timeout=30_000)
    assert list(outside.iterdir()) == [] and not (tmp_path / "etc").exists()
