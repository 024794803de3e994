"""Locust's internals that swarmgauge uses still exist and behave as the adapter expects: an upgrade that breaks
one fails here by name, not as a slow or silent run."""

import inspect

from locust import argument_parser
from locust.runners import MasterRunner, Runner, WorkerRunner

from swarmgauge.core import locust_compat


def test_default_args_dict_is_a_module_function_returning_the_defaults():
    assert callable(argument_parser.default_args_dict)
    defaults = argument_parser.default_args_dict()
    assert isinstance(defaults, dict) and "num_users" in defaults


def test_the_worker_still_looks_up_default_args_dict_through_the_module():
    """The cache works only while the worker calls ``argument_parser.default_args_dict`` at call time."""
    source = inspect.getsource(WorkerRunner)
    assert "default_args_dict" in source


def test_cache_default_args_builds_the_dict_once_and_hands_out_copies(monkeypatch):
    calls = []
    original = argument_parser.default_args_dict

    def counting() -> dict:
        calls.append(1)
        return original()

    monkeypatch.setattr(argument_parser, "default_args_dict", counting)
    locust_compat.cache_default_args()
    first = argument_parser.default_args_dict()
    first["num_users"] = -1
    second = argument_parser.default_args_dict()
    assert len(calls) == 1 and second["num_users"] != -1
    locust_compat.cache_default_args()
    assert argument_parser.default_args_dict().get("num_users") == second["num_users"]


def test_runners_keep_custom_messages_as_a_mapping_filled_by_register_message():
    source = inspect.getsource(Runner.register_message)
    assert "custom_messages" in source
    assert "custom_messages" in inspect.getsource(Runner.__init__) or "custom_messages" in inspect.getsource(Runner)
    assert issubclass(MasterRunner, Runner) and issubclass(WorkerRunner, Runner)


def test_has_message_handler_reads_the_registered_types():
    class RunnerWithMessages:
        def __init__(self) -> None:
            self.custom_messages = {"swarmgauge_step": (lambda **_: None, False)}

    assert locust_compat.has_message_handler(RunnerWithMessages(), "swarmgauge_step")
    assert not locust_compat.has_message_handler(RunnerWithMessages(), "other")
    assert not locust_compat.has_message_handler(object(), "swarmgauge_step")


def test_a_workers_send_stats_fires_report_to_master_and_sends_one_stats_message():
    """What send_worker_stats_now relies on: the reporter's own send, the listeners' data included."""
    from locust.runners import WorkerRunner

    source = inspect.getsource(WorkerRunner._send_stats)
    assert "report_to_master.fire" in source and 'Message("stats", data' in source
    sent = []

    class Worker:
        def _send_stats(self) -> None:
            sent.append("stats")

    locust_compat.send_worker_stats_now(Worker())
    assert sent == ["stats"]


def test_every_listed_private_attribute_is_checked_here():
    listed = {name for names in locust_compat.PRIVATE_ATTRIBUTES.values() for name in names}
    source = inspect.getsource(inspect.getmodule(test_every_listed_private_attribute_is_checked_here))
    assert all(name in source for name in listed)


def test_the_masters_worker_table_gives_live_and_missing_workers():
    from locust.runners import STATE_MISSING, STATE_RUNNING, MasterRunner, WorkerNode, WorkerNodes

    class MasterWithWorkers:
        def __init__(self) -> None:
            self.clients = WorkerNodes()

    runner = MasterWithWorkers()
    for worker_id, state in (("b", STATE_RUNNING), ("a", STATE_RUNNING), ("c", STATE_MISSING)):
        runner.clients[worker_id] = WorkerNode(worker_id, state=state)
    assert locust_compat.live_worker_ids(runner) == ["a", "b"]
    assert locust_compat.missing_worker_ids(runner) == ["c"]
    assert "self.clients = WorkerNodes()" in inspect.getsource(MasterRunner.__init__)


class _Clock:
    """Stands in for the ``time`` module inside ``locust.stats`` so requests land on chosen seconds."""

    def __init__(self, now: float) -> None:
        self.now = now

    def time(self) -> float:
        return self.now


def _stats_over(monkeypatch, seconds: int, start: float = 1_700_000_000.0):
    """A real ``RequestStats`` that saw two requests a second, one failing, for ``seconds`` seconds."""
    from locust import stats as locust_stats

    clock = _Clock(start)
    monkeypatch.setattr(locust_stats, "time", clock)
    stats = locust_stats.RequestStats()
    for second in range(seconds):
        clock.now = start + second + 0.5
        stats.log_request("GET", "/a", 10, 0)
        stats.log_request("GET", "/b", 20, 0)
        stats.log_error("GET", "/b", "boom")
    return stats


def test_locust_keeps_one_per_second_count_per_second_of_the_run(monkeypatch):
    """What prune_per_second_counts relies on: the dicts exist, keyed by whole seconds, for the whole run."""
    stats = _stats_over(monkeypatch, 300)
    entry = stats.get("/a", "GET")
    assert isinstance(entry.num_reqs_per_sec, dict) and isinstance(entry.num_fail_per_sec, dict)
    assert len(stats.total.num_reqs_per_sec) == 300 and len(stats.get("/b", "GET").num_fail_per_sec) == 300
    assert all(isinstance(second, int) for second in entry.num_reqs_per_sec)


def test_pruning_per_second_counts_bounds_them_and_keeps_current_rps(monkeypatch):
    stats = _stats_over(monkeypatch, 300)
    before = {key: (e.current_rps, e.current_fail_per_sec, e.total_rps) for key, e in stats.entries.items()}
    total_before = (stats.total.current_rps, stats.total.current_fail_per_sec, stats.total.num_requests)
    dropped = locust_compat.prune_per_second_counts(stats)
    assert dropped > 0
    for entry in [stats.total, *stats.entries.values()]:
        assert len(entry.num_reqs_per_sec) <= locust_compat.PER_SECOND_KEPT + 1
        assert len(entry.num_fail_per_sec) <= locust_compat.PER_SECOND_KEPT + 1
    after = {key: (e.current_rps, e.current_fail_per_sec, e.total_rps) for key, e in stats.entries.items()}
    assert after == before
    assert (stats.total.current_rps, stats.total.current_fail_per_sec, stats.total.num_requests) == total_before
    assert locust_compat.prune_per_second_counts(stats) == 0


def test_current_rps_reads_no_further_back_than_the_kept_seconds():
    """If Locust's current RPS ever looks further back than 12 s, pruning at 60 s would change it: fail here."""
    from locust.stats import StatsEntry

    for reader in (StatsEntry.current_rps, StatsEntry.current_fail_per_sec):
        assert "last_request_timestamp) - 12" in inspect.getsource(reader.fget)
    assert locust_compat.PER_SECOND_KEPT > 12


def test_pruning_an_unused_stats_does_nothing():
    from locust.stats import RequestStats

    assert locust_compat.prune_per_second_counts(RequestStats()) == 0


def test_locust_appends_chart_rows_to_request_stats_history():
    from locust import stats as locust_stats

    assert isinstance(locust_stats.RequestStats().history, list)
    assert "stats.history.append" in inspect.getsource(locust_stats.update_stats_history)


def test_thinning_history_bounds_it_and_keeps_the_newest_rows_and_the_first():
    from locust.stats import RequestStats

    stats = RequestStats()
    for n in range(10 * locust_compat.HISTORY_KEPT):
        stats.history.append({"time": n})
        locust_compat.thin_history(stats)
        assert len(stats.history) <= locust_compat.HISTORY_KEPT
    times = [row["time"] for row in stats.history]
    assert times == sorted(times) and times[0] == 0
    assert times[-locust_compat.HISTORY_KEPT // 4 :] == list(
        range(times[-1] - locust_compat.HISTORY_KEPT // 4 + 1, times[-1] + 1)
    )


def test_set_option_help_replaces_the_text_locust_gave_an_option():
    parser = argument_parser.get_empty_argument_parser(add_help=True)
    argument_parser.setup_parser_arguments(parser)
    assert "Defaults to '*'" in " ".join(parser.format_help().split())  # Locust's own text, which swarmgauge corrects
    locust_compat.set_option_help(parser, "--web-host", "Bind here. Defaults to 127.0.0.1")
    shown = " ".join(parser.format_help().split())
    assert "Bind here. Defaults to 127.0.0.1" in shown and "Defaults to '*'" not in shown


# --- open-model timing: the request hook and the task loop (request_adjustment, route_task_iterations) ---------


def test_request_hooks_fire_takes_keywords_and_reverse_only():
    from locust.event import EventHook

    parameters = inspect.signature(EventHook.fire).parameters
    assert [(p.name, p.kind) for p in parameters.values()] == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("reverse", inspect.Parameter.KEYWORD_ONLY),
        ("kwargs", inspect.Parameter.VAR_KEYWORD),
    ]


def test_locusts_http_users_fire_the_environments_own_request_hook():
    """What wrapping that one hook's ``fire`` relies on to reach HttpUser's and FastHttpUser's requests."""
    from locust import FastHttpUser, HttpUser

    for user_class in (HttpUser, FastHttpUser):
        assert "request_event=self.environment.events.request" in inspect.getsource(user_class.__init__)


def test_a_request_adjustment_adjusts_before_every_listener_once_while_engaged():
    from locust.event import EventHook, Events

    events = Events()
    seen = []
    events.request.add_listener(lambda **kwargs: seen.append(kwargs["response_time"]))

    def add_ten(event: dict) -> None:
        event["response_time"] += 10

    adjustment = locust_compat.request_adjustment(events, add_ten)
    assert locust_compat.request_adjustment(events, add_ten) is adjustment  # one per hook
    events.request.fire(request_type="GET", name="/", response_time=1.0, response_length=0)
    adjustment.engage()
    adjustment.engage()
    events.request.fire(request_type="GET", name="/", response_time=2.0, response_length=0)
    events.request.fire(reverse=True, request_type="GET", name="/", response_time=3.0, response_length=0)
    adjustment.release()
    adjustment.release()
    events.request.fire(request_type="GET", name="/", response_time=4.0, response_length=0)
    assert seen == [1.0, 12.0, 13.0, 4.0]
    assert "fire" not in vars(events.request) and type(events.request).fire is EventHook.fire  # Locust's own again


def test_a_request_adjustment_released_gives_back_a_wrapper_someone_else_put_there():
    from locust.event import Events

    events = Events()
    seen = []

    def theirs(**kwargs) -> None:
        seen.append(("theirs", kwargs["response_time"]))

    events.request.fire = theirs
    adjustment = locust_compat.request_adjustment(events, lambda event: event.update(response_time=0.0))
    adjustment.engage()
    events.request.fire(response_time=5.0)
    adjustment.release()
    events.request.fire(response_time=6.0)
    assert seen == [("theirs", 0.0), ("theirs", 6.0)] and events.request.fire is theirs


def test_locusts_task_loop_calls_execute_task_per_task_and_wait_sleeps_through__sleep():
    from locust import SequentialTaskSet, TaskSet
    from locust.user.markov_taskset import MarkovTaskSet
    from locust.user.task import DefaultTaskSet

    assert "self.execute_next_task()" in inspect.getsource(TaskSet.run)
    assert "self.execute_task(" in inspect.getsource(TaskSet.execute_next_task)
    assert "self._sleep(self.wait_time())" in inspect.getsource(TaskSet.wait)
    assert "execute_task" in DefaultTaskSet.__dict__ and "execute_task" in TaskSet.__dict__
    for subclass in (SequentialTaskSet, MarkovTaskSet):
        assert not {"execute_task", "wait", "_sleep", "run"} & set(subclass.__dict__), subclass


def test_user_start_runs_user_run_whose_loop_is_the_default_taskset():
    from locust import User

    assert "user.run()" in inspect.getsource(User.start)
    assert "DefaultTaskSet(self)" in inspect.getsource(User.run)


def _unrouted(monkeypatch) -> None:
    """Locust's own task loop for this test, whatever an earlier test installed (restored afterwards)."""
    from locust.user.task import DefaultTaskSet, TaskSet

    for owner in (TaskSet, DefaultTaskSet):
        monkeypatch.setattr(owner, "execute_task", inspect.unwrap(owner.__dict__["execute_task"]))
    monkeypatch.setattr(TaskSet, "_sleep", inspect.unwrap(TaskSet.__dict__["_sleep"]))


def _routed_run(monkeypatch, user_class, iterations: int) -> tuple[list[str], list[float]]:
    """Run ``user_class`` until ``iterations`` tasks went through the routing; the task names and asked sleeps."""
    from locust.env import Environment
    from locust.exception import StopUser

    _unrouted(monkeypatch)
    tasks: list[str] = []
    sleeps: list[float] = []

    def run_task(taskset, execute, task) -> None:
        tasks.append(task.__name__)
        if len(tasks) > iterations:
            raise StopUser()
        execute(taskset, task)

    def sleep_for(_taskset, seconds: float) -> float:
        sleeps.append(seconds)
        return 0.0

    locust_compat.route_task_iterations(run_task, sleep_for).engage()
    user_class(Environment(user_classes=[user_class])).run()
    return tasks, sleeps


def test_route_task_iterations_routes_every_task_and_every_wait_of_a_user(monkeypatch):
    from locust import User, constant, task

    class Counting(User):
        wait_time = constant(30)

        @task
        def one(self) -> None:
            pass

    tasks, sleeps = _routed_run(monkeypatch, Counting, 3)
    assert tasks == ["one"] * 4 and sleeps == [30, 30, 30]  # the 30 s waits were asked, and not slept


def test_a_nested_taskset_is_no_iteration_its_tasks_are(monkeypatch):
    from locust import TaskSet, User, constant, task

    class Inner(TaskSet):
        @task
        def inner(self) -> None:
            pass

    class Nested(User):
        wait_time = constant(0)
        tasks = [Inner]

    tasks, _sleeps = _routed_run(monkeypatch, Nested, 2)
    assert tasks == ["inner"] * 3


def _paced_user(runs: int, wait: float = 0.5):
    """A User whose one task stops it on its ``runs``-th run: how many ran, and the class."""
    from locust import User, constant, task
    from locust.exception import StopUser

    ran: list[str] = []

    class Paced(User):
        wait_time = constant(wait)

        @task
        def one(self) -> None:
            ran.append("one")
            if len(ran) == runs:
                raise StopUser()

    return Paced, ran


def test_a_released_routing_is_locusts_own_task_loop_with_its_wait_on_the_timer(monkeypatch):
    """A closed-model run pays nothing per iteration for open-model timing: Locust's own ``execute_task`` runs,
    and its wait goes straight to the timer wait (patch ``locust-wait-on-timer``) with what ``wait_time`` asked."""
    from locust.env import Environment
    from locust.user.task import DefaultTaskSet, TaskSet

    _unrouted(monkeypatch)
    own = {owner: owner.__dict__["execute_task"] for owner in (TaskSet, DefaultTaskSet)}
    slept: list[float] = []
    monkeypatch.setattr(locust_compat, "sleep_on_timer", slept.append)
    asked: list[str] = []
    routing = locust_compat.route_task_iterations(
        lambda *_args: asked.append("run_task"), lambda *_args: asked.append("sleep_for")
    )
    assert locust_compat.route_task_iterations(lambda *_args: None, lambda *_args: None) is routing  # one a process
    assert not routing.engaged
    assert all(owner.__dict__["execute_task"] is own[owner] for owner in own)
    paced, ran = _paced_user(3)
    paced(Environment(user_classes=[paced])).run()
    assert ran == ["one"] * 3 and slept == [0.5, 0.5] and asked == []


def test_engaging_routes_and_a_release_gives_back_what_was_there_an_iteration_running_finishing(monkeypatch):
    from locust.env import Environment
    from locust.user.task import DefaultTaskSet, TaskSet

    _unrouted(monkeypatch)
    own = DefaultTaskSet.__dict__["execute_task"]
    theirs_ran: list[str] = []

    def theirs(self, task) -> None:  # a wrapper someone else put on Locust's task loop before swarmgauge
        theirs_ran.append(task.__name__)
        own(self, task)

    monkeypatch.setattr(DefaultTaskSet, "execute_task", theirs)
    monkeypatch.setattr(locust_compat, "sleep_on_timer", lambda _seconds: None)
    events: list[str] = []

    def run_task(taskset, execute, task) -> None:
        events.append("begin")
        try:
            routing.release()  # released while this iteration runs: it finishes here, its finally included
            execute(taskset, task)
        finally:
            events.append("end")

    routing = locust_compat.route_task_iterations(run_task, lambda _taskset, seconds: seconds)
    routing.engage()
    routing.engage()  # idempotent: one wrapper, what it found kept
    assert routing.engaged and DefaultTaskSet.__dict__["execute_task"] is not theirs
    paced, ran = _paced_user(3, wait=0)
    paced(Environment(user_classes=[paced])).run()
    assert events == ["begin", "end"] and ran == ["one"] * 3 and theirs_ran == ["one"] * 3
    assert not routing.engaged and DefaultTaskSet.__dict__["execute_task"] is theirs
    assert inspect.unwrap(TaskSet.__dict__["execute_task"]) is TaskSet.__dict__["execute_task"]  # Locust's own
    assert TaskSet.__dict__["_sleep"].swarmgauge_routing is routing  # released: the timer wait, not Locust's


def test_runs_its_tasks_tells_a_user_with_its_own_loop():
    from locust import FastHttpUser, HttpUser, User

    class OwnLoop(User):
        def run(self) -> None:
            pass

    assert all(locust_compat.runs_its_tasks(cls) for cls in (User, HttpUser, FastHttpUser))
    assert not locust_compat.runs_its_tasks(OwnLoop)


def test_the_runner_keeps_its_shape_greenlet_and_last_tick_and_stop_shape_worker_ends_only_the_shape():
    """An EDIT taking over a plan ends ``Runner.shape_greenlet`` (as ``Runner.stop`` does) and leaves the users."""
    import gevent

    source = inspect.getsource(Runner)
    assert "self.shape_greenlet" in source and "self.shape_last_tick" in source

    class ShapeRunner:
        def __init__(self) -> None:
            self.shape_greenlet = gevent.spawn(gevent.sleep, 30)
            self.shape_last_tick = (3, 1.0)

    runner = ShapeRunner()
    worker = runner.shape_greenlet
    locust_compat.stop_shape_worker(runner)
    assert worker.dead and runner.shape_greenlet is None and runner.shape_last_tick is None


def test_a_worker_joining_a_running_master_is_the_environments_runner_at_its_test_start():
    """Real master and workers in this process on loopback: the late worker's first spawn (and test_start) comes
    while its constructor still waits for the ack; listeners must already see a WorkerRunner there."""
    import gevent
    from locust import User, constant, task
    from locust.env import Environment

    from tests.listeners.sim_run import free_port

    class Idle(User):
        wait_time = constant(1)

        @task
        def nothing(self) -> None:
            pass

    locust_compat.attach_worker_runner_early()
    port = free_port()
    master = Environment(user_classes=[Idle]).create_master_runner("127.0.0.1", port)
    first = Environment(user_classes=[Idle])
    first.create_worker_runner("127.0.0.1", port)
    late = Environment(user_classes=[Idle])
    seen: list[object] = []
    late.events.test_start.add_listener(lambda environment, **_: seen.append(environment.runner))
    try:
        for _ in range(50):
            if master.worker_count == 1:
                break
            gevent.sleep(0.1)
        master.start(2, spawn_rate=10)
        gevent.sleep(0.5)
        runner = late.create_worker_runner("127.0.0.1", port)
        for _ in range(50):
            if seen:
                break
            gevent.sleep(0.1)
    finally:
        for env in (late, first):
            if env.runner is not None:
                env.runner.quit()
                # quit() stops the users it counted; one the spawn started after the count lived on in this process
                # and ran into later tests (where a patched gevent.sleep made it spin and starve the hub)
                env.runner.user_greenlets.kill(block=True, timeout=5)
        master.quit()
    assert seen == [runner], "the late worker's test_start saw its runner"


def test_a_waiting_user_stopped_while_its_kill_is_late_starts_no_new_task() -> None:
    """The kill of a waiting user lands a loop callback after the stop; held back here entirely (a fake group that
    never kills), the user that wakes from its wait must stop at wait()'s check instead of starting a task whose
    request the late kill would cut."""
    import gevent
    from gevent.pool import Group
    from locust import User, constant, task
    from locust.env import Environment

    class LateKillGroup(Group):
        """Fake: a group whose killone does nothing, as if the kill were still queued."""

        def killone(self, *_args: object, **_kwargs: object) -> None:
            return None

    iterations: list[int] = []

    class Waiting(User):
        wait_time = constant(0.05)

        @task
        def count(self) -> None:
            iterations.append(1)

    locust_compat.stop_waiting_users_between_tasks()
    user = Waiting(Environment(user_classes=[Waiting]))
    greenlet = user.start(LateKillGroup())
    for _ in range(100):
        if iterations:
            break
        gevent.sleep(0.005)
    assert iterations, "the user ran its first task"
    assert user.stop(force=False) is True
    greenlet.join(timeout=5)
    assert greenlet.dead, "the user ended at wait()'s check with no kill"
    assert len(iterations) == 1
