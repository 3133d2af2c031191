"""The benchmark's WSGI entry point: the site's application, with `/bench/twin/<path>` answered
from the store's answers kept in memory (bench/twin.py). Only `make bench` and its test serve it."""

from bench.twin import twin_wsgi
from strongroom.wsgi import application as site_application

application = twin_wsgi(site_application)
