"""Locust User classes and the gevent clients under them."""
