"""``core/locust_memory``: Locust's per-user objects made smaller behave as Locust's own (a TaskSet's queue, a User's
greenlet); an upgrade that changes what they replace fails here by name."""

import gc
import inspect

from swarmgauge.core import locust_memory
from tests.core.test_locust_compat import _unrouted


def test_a_taskset_queues_its_tasks_in_a_list_in_the_order_locust_schedules_them(monkeypatch):
    from locust import TaskSet, User, task
    from locust.env import Environment

    _unrouted(monkeypatch)
    monkeypatch.setattr(TaskSet, "__init__", inspect.unwrap(TaskSet.__init__))  # Locust's own, restored afterwards
    locust_memory.queue_tasks_in_lists()
    locust_memory.queue_tasks_in_lists()  # idempotent: one wrapper

    class Plain(User):
        @task
        def nothing(self) -> None:
            pass

    taskset = TaskSet(Plain(Environment(user_classes=[Plain])))
    ran: list[str] = []
    for name in ("b", "c"):
        taskset.schedule_task(lambda _taskset, name=name: ran.append(name))
    taskset.schedule_task(lambda _taskset: ran.append("a"), first=True)
    queue = taskset._task_queue
    assert type(queue) is locust_memory.TaskQueue and len(queue) == 3
    while queue:
        taskset.execute_next_task()
    assert ran == ["a", "b", "c"]
    assert not hasattr(TaskSet.__init__.__wrapped__, "__wrapped__")  # one wrapper around Locust's own


def test_users_started_with_one_function_run_as_locusts_and_share_it(monkeypatch):
    from gevent.pool import Group
    from locust import User
    from locust.env import Environment

    monkeypatch.setattr(User, "start", inspect.unwrap(User.start))  # Locust's own, restored afterwards
    locust_memory.start_users_with_one_function()
    locust_memory.start_users_with_one_function()  # idempotent: one wrapper
    assert not hasattr(User.start.__wrapped__, "__wrapped__")
    ran: list[User] = []

    class Recorded(User):
        def run(self) -> None:  # type: ignore[override]  # User.run is final; this records the call
            ran.append(self)

    environment = Environment(user_classes=[Recorded])
    group = Group()
    users = [Recorded(environment) for _ in range(2)]
    greenlets = [user.start(group) for user in users]
    assert [greenlet.args[0] for greenlet in greenlets] == users  # how Locust finds a greenlet's user
    assert all(type(greenlet) is locust_memory.UserGreenlet for greenlet in greenlets)
    assert greenlets[0]._run is greenlets[1]._run is locust_memory.run_user  # the class's, in no greenlet's dict
    assert not [ref for ref in gc.get_referents(*greenlets) if type(ref) is dict and ref]
    group.join(timeout=5)
    assert ran == users
    assert [user._greenlet for user in users] == greenlets and all(user._group is group for user in users)
