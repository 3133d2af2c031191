"""WSGI entry point (gunicorn strongroom.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "strongroom.settings")
application = get_wsgi_application()
