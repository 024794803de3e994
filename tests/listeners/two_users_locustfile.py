"""The run-machinery locustfile (``sim_locustfile``) with a second User class that a plan's ``user_classes`` leaves
out, so a test can tell the classes that ran from the classes the locustfile offers."""

from locust import User, constant, task

from tests.listeners.sim_locustfile import *  # noqa: F403 - SimUser and PlanShape


class IdleUser(User):
    """Never picked by the tests' plans; if it ran it would show in run.json's ``user_classes``."""

    wait_time = constant(1)

    @task
    def nothing(self) -> None:
        """No request: it is here to be offered, not to load anything."""
