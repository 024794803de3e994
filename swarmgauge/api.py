"""The Users and shapes a user's own locustfile builds on, from one documented place.

Import the module (``from swarmgauge import api as sg``, then ``sg.MarkUser``, ``sg.StepRamp``), or a User by name,
never a shape by name and never ``*``: Locust runs every shape class it finds in a locustfile, so only your own
subclass may be in its namespace. Every User here is
abstract: subclass it and add tasks; the clients serve a User of your own. ``import swarmgauge.locust`` registers
the listeners and their options.
"""

from swarmgauge.shapes import ArrivalRate, Burst, Churn, PlanShape, Soak, StepRamp
from swarmgauge.shapes.base import SwarmShape
from swarmgauge.shapes.open_model import tickets
from swarmgauge.users.brain_user import BrainUser
from swarmgauge.users.kneo_client import KneoClient
from swarmgauge.users.kneo_user import KneoUser
from swarmgauge.users.mark_client import MarkClient
from swarmgauge.users.mark_user import MarkUser
from swarmgauge.users.mcp_client import MCPClient
from swarmgauge.users.mcp_user import MCPChurnUser, MCPToolUser, MCPUser
from swarmgauge.users.mdk_client import MDKClient
from swarmgauge.users.mdk_user import MDKUser
from swarmgauge.users.recording import measure

USERS = (BrainUser, KneoUser, MarkUser, MCPUser, MCPToolUser, MCPChurnUser, MDKUser)
CLIENTS = (KneoClient, MarkClient, MCPClient, MDKClient)
SHAPES = (StepRamp, Soak, ArrivalRate, Burst, Churn, PlanShape)

__all__ = [
    "CLIENTS",
    "SHAPES",
    "USERS",
    "ArrivalRate",
    "BrainUser",
    "Burst",
    "Churn",
    "KneoClient",
    "KneoUser",
    "MCPChurnUser",
    "MCPClient",
    "MCPToolUser",
    "MCPUser",
    "MDKClient",
    "MDKUser",
    "MarkClient",
    "MarkUser",
    "PlanShape",
    "Soak",
    "StepRamp",
    "SwarmShape",
    "measure",
    "tickets",
]
