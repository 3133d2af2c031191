"""Read-side summaries of the keyspace itself, for `manage.py keyspace` and the dashboard."""

from __future__ import annotations

from dataclasses import dataclass, field

import redis

from strongroom.keyspace import FAMILIES, Family, family_of, prefix_pattern

# MEMORY USAGE is asked of at most this many keys per family; the rest is extrapolated.
MEMORY_SAMPLES = 50


@dataclass
class FamilyStats:
    family: Family | None
    count: int = 0
    sampled_bytes: int = 0
    samples: int = 0
    sample_keys: list[str] = field(default_factory=list)

    @property
    def approx_bytes(self) -> int:
        if not self.samples:
            return 0
        return round(self.sampled_bytes / self.samples * self.count)


def keyspace_stats(client: redis.Redis, *, scan_batch: int = 1000) -> list[FamilyStats]:
    """Every declared family with its live count and approximate memory (SCAN, never KEYS).

    Keys under the site's prefix that match no family are reported under `None`.
    """
    stats: dict[str | None, FamilyStats] = {
        name: FamilyStats(family) for name, family in FAMILIES.items()
    }
    for key in client.scan_iter(match=prefix_pattern(), count=scan_batch):
        family = family_of(key)
        name = family.name if family else None
        entry = stats.setdefault(name, FamilyStats(family))
        entry.count += 1
        if len(entry.sample_keys) < MEMORY_SAMPLES:
            entry.sample_keys.append(key)
    pipe = client.pipeline(transaction=False)
    order = [(entry, key) for entry in stats.values() for key in entry.sample_keys]
    for _, key in order:
        pipe.memory_usage(key)
    for (entry, _), used in zip(order, pipe.execute(), strict=True):
        if used is not None:
            entry.sampled_bytes += int(used)
            entry.samples += 1
    return list(stats.values())
