"""The small core the lower layers share: hooks that Users and shapes call and listeners implement.

``swarmgauge.errors`` and ``swarmgauge.files`` belong to the same layer (they stay where every branch imports them).
Nothing here imports a listener, a User, a shape or a target.
"""
