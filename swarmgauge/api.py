"""The Users and shapes a user's own locustfile builds on, from one documented place.

Import by name what you use (``from swarmgauge.api import MarkUser, StepRamp``), never ``*``: Locust runs every
shape class it finds in a locustfile, so only the one shape you want may be in its namespace. Every User here is
abstract: subclass it and add tasks. ``import swarmgauge.locust`` registers the listeners and their options.
"""

from swarmgauge.shapes import ArrivalRate, Burst, Churn, PlanShape, Soak, StepRamp
from swarmgauge.shapes.base import SwarmShape
from swarmgauge.shapes.open_model import tickets
from swarmgauge.users.brain import BrainUser
from swarmgauge.users.kneo import KneoUser
from swarmgauge.users.mark_user import MarkUser
from swarmgauge.users.mcp import MCPChurnUser, MCPUser
from swarmgauge.users.mdk import MDKUser
from swarmgauge.users.recording import measure

USERS = (BrainUser, KneoUser, MarkUser, MCPUser, MCPChurnUser, MDKUser)
SHAPES = (StepRamp, Soak, ArrivalRate, Burst, Churn, PlanShape)

__all__ = [
    "SHAPES",
    "USERS",
    "ArrivalRate",
    "BrainUser",
    "Burst",
    "Churn",
    "KneoUser",
    "MCPChurnUser",
    "MCPUser",
    "MDKUser",
    "MarkUser",
    "PlanShape",
    "Soak",
    "StepRamp",
    "SwarmShape",
    "measure",
    "tickets",
]
