"""The start form's values read with each option's own type: lists, ticks, bad values named, code-set values kept,
and no secret shown in the form's defaults."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from types import SimpleNamespace

import pytest
from werkzeug.datastructures import ImmutableMultiDict

from swarmgauge.listeners import webui_form
from swarmgauge.listeners.webui_form import FormError, apply_form, convert, scrub_template_args
from tests.listeners.sim_run import ROOT

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
