"""How a request is named to a reader: one function for the report's tables and the web UI's views."""

from __future__ import annotations


def request_title(request_type: object, name: object) -> str:
    """``FETCH /corpus/{topic}``; a name that already starts with its type (``LOOKUP /``) is not doubled, and the
    ``Aggregated`` row (no type) is its name alone."""
    kind, label = str(request_type or ""), str(name)
    if not kind or label.startswith(f"{kind} "):
        return label
    return f"{kind} {label}"


#: The request type the MDK client records (``users/mdk_client.py``) and the MDK fleet's figures read
#: (``listeners/mdk_results.py``), here because a listener may not import a User's module.
MDK_REQUEST_TYPE = "MDK"
#: The burst users' connect ahead of the burst (``MDKClient.connect``): a request of its own name, so the run counts
#: every request the Gateway saw, and no figure read by name (``action``, ``telemetry``, ``summary``) holds it.
MDK_CONNECT_NAME = "connect"
