"""Whether the store is there: `healthy` (the health page, the guard) and the start-up `check`
(the server answers, runs Lua, is not one node of a larger cluster; loads the libraries)."""

from __future__ import annotations

import re

import redis
from django.core.exceptions import ImproperlyConfigured

from strongroom.store import (
    UNAVAILABLE,
    StoreUnavailable,
    is_cluster,
    load_functions,
    primaries,
    topology_refresh,
)


def _cluster_ok(node: redis.Redis) -> bool:
    info = node.execute_command("CLUSTER INFO")
    if isinstance(info, dict):  # redis-py parses the reply into a dict
        return info.get("cluster_state") == "ok"
    return "cluster_state:ok" in str(info)


def healthy(client: redis.Redis) -> bool:
    """One server: it answers PING. A cluster: every primary answers and reports
    `cluster_state:ok` (the topology is read again once when one does not)."""
    if not is_cluster(client):
        return bool(client.ping())
    for attempt in (1, 2):
        try:
            return all(_cluster_ok(node) for node in primaries(client))
        except UNAVAILABLE:
            if attempt == 2:
                raise
            topology_refresh(client)
    return False


def _cluster_size(client: redis.Redis) -> int:
    """How many primaries serve slots when `client`'s server is a cluster node (0 if not)."""
    if not int(client.info("cluster").get("cluster_enabled", 0)):
        return 0
    info = client.execute_command("CLUSTER INFO")
    if isinstance(info, dict):
        return int(info.get("cluster_size", 0))
    found = re.search(r"cluster_size:(\d+)", str(info))
    return int(found.group(1)) if found else 0


def check(client: redis.Redis) -> dict[str, str]:
    """Start-up check: the server answers and runs Lua. Returns server name and version."""
    if not healthy(client):
        raise StoreUnavailable("the cluster is not ok (cluster_state)")
    if not is_cluster(client) and _cluster_size(client) > 1:
        raise ImproperlyConfigured(
            "REDIS_URL points at one node of a cluster of several primaries: write it "
            "redis+cluster://host:port[,host:port...] (rediss+cluster:// for TLS)"
        )
    first = primaries(client)[0]
    if first.eval("return 1", 0) != 1:
        raise StoreUnavailable("the store does not run Lua scripts")
    load_functions(client)
    info = first.info("server")
    name = "valkey" if "valkey_version" in info else "redis"
    return {"server": name, "version": str(info.get(f"{name}_version", info["redis_version"]))}
