"""gunicorn settings shared by `manage.py serve`, the test fixture and the benchmark."""

from __future__ import annotations

from typing import Any

timeout = 30
graceful_timeout = 10
keepalive = 5
# Whether a request came over HTTPS is Django's call alone (BEHIND_PROXY in settings.py, which
# trusts X-Forwarded-Proto). gunicorn would otherwise trust scheme headers from any local peer
# by itself, so a proxy that passes a client's own X-Forwarded-Proto through would let that
# client claim HTTPS while BEHIND_PROXY is off.
secure_scheme_headers: dict[str, str] = {}
forwarded_allow_ips = "127.0.0.1"
forwarder_headers = ""
# The access log leaves out the secrets some links carry (strongroom/redact.py).
logger_class = "strongroom.redact.AccessLogger"
# No control socket: gunicorn would put it in $HOME/.gunicorn (outside STRONGROOM_DATA_DIR), where
# two sites on one host replace each other's; nothing here uses gunicornc. (gunicorn 25.1+;
# older versions have no socket and ignore the name.)
control_socket_disable = True
# The longest request line gunicorn takes (its own maximum; nginx's default buffer is 8 KB): a
# long catalog or booking address reaches the site, which answers it with its own page. Longer
# still, gunicorn refuses it with the site's page too (on_starting).
limit_request_line = 8190


def on_starting(server: Any) -> None:
    from strongroom.edge_errors import install

    install()
