"""Hooks: without a listener they do what a run without it needs; a listener's implementation replaces that."""

from swarmgauge.core import hooks
from swarmgauge.core.hooks import Hook


def test_a_hook_without_implementation_uses_its_default():
    hook: Hook[int] = Hook("answer", lambda *args: len(args))
    assert hook(1, 2) == 2


def test_an_implementation_replaces_the_default_and_works_as_a_decorator():
    hook: Hook[str] = Hook("name", lambda: "default")

    @hook.implement
    def implementation() -> str:
        return "listener"

    assert hook() == "listener" and implementation() == "listener"


def test_defaults_mean_no_listener_no_effect():
    fresh = {hook.name: Hook(hook.name, hook.default) for hook in hooks.ALL_HOOKS}
    assert fresh["current_step"](object()) is None
    assert fresh["run_dir"](object()) is None
    assert fresh["final_reports_in"](object()) is True
    assert fresh["take_ticket"](object()) is False
    assert fresh["redact"]("text", None) == "text"
    assert fresh["count_step"](object(), "tickets", 3, step=1) is None


def test_importing_the_listeners_implements_every_hook():
    import swarmgauge.locust  # noqa: F401

    assert [hook.name for hook in hooks.ALL_HOOKS if hook.implementation is None] == []


def test_registries_keep_one_entry_per_name():
    hooks.register_step_counter("test_counter")
    hooks.register_step_counter("test_counter")
    assert hooks.step_counter_names().count("test_counter") == 1
    hooks.register_metric("test_metric", lambda environment, step: 1.0)
    assert hooks.metric_provider("test_metric")(None, None) == 1.0 and "test_metric" in hooks.metric_terms()


def test_end_plan_ends_the_last_step_then_asks_the_plan_to_end(monkeypatch):
    calls: list[str] = []

    class Plan:
        def request_end(self) -> None:
            calls.append("request_end")

    monkeypatch.setattr(hooks.end_run, "implementation", lambda env: calls.append("end_run"))
    env = type("Env", (), {"shape_class": Plan()})()
    assert hooks.end_plan(env) is True
    assert calls == ["end_run", "request_end"]


def test_end_plan_does_nothing_for_a_run_without_a_plan(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr(hooks.end_run, "implementation", lambda env: calls.append("end_run"))
    assert hooks.end_plan(type("Env", (), {"shape_class": None})()) is False
    assert calls == []
