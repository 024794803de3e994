"""Suite-wide set-up: gevent's monkey patching must happen before anything imports ssl.

Locust patches at import; several modules under test (MCP, kneo, the HTTP users) import ssl through urllib3 or
anyio, so the patch is done here, first, exactly as the ``locust`` command does it.
"""

import locust  # noqa: F401  (patches the standard library on import)
