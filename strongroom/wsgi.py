"""WSGI entry point (gunicorn strongroom.wsgi)."""

import gc
import logging
import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
application = get_wsgi_application()

# A store the apps' startup checks refuse (e.g. one still to be upgraded) is not served: the
# worker stops with the message, which names the command to run.
from strongroom.startup import startup_checks  # noqa: E402
from strongroom.store import (  # noqa: E402
    UNAVAILABLE,
    StoreUnavailable,
    check_on_connect,
    get_store,
    reset_store,
)

try:
    startup_checks(get_store())
except (*UNAVAILABLE, StoreUnavailable) as away:
    # A worker started while the store is stalled or down (one gunicorn replaced mid-outage, or
    # a slow boot that a stall overtook) still serves: the 503 page until the store answers,
    # then the checks, on the first client made. A worker that exited here would stop gunicorn's
    # master ("Worker failed to boot"), and the whole site with it.
    logging.getLogger(__name__).warning(
        "the store did not answer while this worker started (%s): the 503 page until it "
        "does, then the startup checks",
        away,
    )
    reset_store()
    check_on_connect(startup_checks)

# Each web process sends due mail in the background (strongroom/outbox_sender.py); gunicorn imports
# this module in every worker after the fork, so each worker has its own thread.
if settings.STRONGROOM_MAIL_SENDER:
    from strongroom.outbox_sender import sender_start

    sender_start()

# Each web process also runs the keeper (strongroom/keeper.py): after a failover it repairs what
# the changed slots may have lost, and it drains what a crash left unindexed.
if settings.STRONGROOM_KEEPER:
    from strongroom.keeper import keeper_start

    keeper_start()

# What is loaded by now (modules, settings, templates, URL patterns: about 100,000 objects)
# lives as long as the worker. Frozen, the collector's full passes no longer walk it: measured
# over 3,000 calendar fragments in one process, the one full pass took 90 ms (every thread of the
# worker waits through it: a tail latency), 6 ms frozen.
gc.freeze()
