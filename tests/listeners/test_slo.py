import pytest

from listeners.slo import parse, split_exprs
from swarmgauge.errors import UsageError


def test_grammar_with_type_name_units_and_scope():
    t = parse("FETCH:/docs:p99<500ms@step")
    assert (t.request_type, t.name, t.metric, t.op, t.value, t.scope) == ("FETCH", "/docs", "p99", "<", 500.0, "step")
    assert parse("GET:p50<1.5s").value == 1500.0
    assert parse("fail_ratio<1%").value == pytest.approx(0.01)
    assert parse("dropped==0").scope == "run"


@pytest.mark.parametrize("expr", ["p99<<5", "p99<fast", "nosuch<5", "p99<5parsecs", ":p99<5"])
def test_malformed_expressions_are_usage_errors(expr):
    with pytest.raises(UsageError):
        parse(expr)


def test_env_style_lists_split_on_comma_and_semicolon():
    assert split_exprs(["a<1;b<2", "c<3"]) == ["a<1", "b<2", "c<3"]
