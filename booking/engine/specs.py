"""Every call spec of booking/lua/booking/, for the tests that check both sides agree."""

from __future__ import annotations

from booking.engine.cancel import CANCEL
from booking.engine.claims import CLAIM
from booking.engine.closures import CLOSURE_WRITE
from booking.engine.desk import HANDOVER
from booking.engine.holds import HOLD, HOLD_RELEASE
from booking.engine.maintenance import FLUSH_ROOM
from booking.engine.moves import MOVE
from booking.engine.moves_calls import MOVE_ABORT, MOVE_COMMIT, MOVE_IN, MOVE_OUT, MOVE_RELEASE
from booking.engine.owners import OWNER_FORGET
from booking.engine.pickup import PICKUP
from booking.engine.priority import PRIORITY_KEEP, PRIORITY_SETTLE
from booking.engine.stats import STATS_REBUILD
from booking.engine.unsure import CLAIM_UNSURE
from booking.engine.waits import WAIT, WAIT_RESERVE, WAITS_CHECK
from booking.engine.window import WINDOW_SET

SPECS = (
    CLAIM, HOLD, HOLD_RELEASE, CANCEL, MOVE, MOVE_IN, MOVE_OUT, MOVE_COMMIT, MOVE_ABORT,
    MOVE_RELEASE, PICKUP, HANDOVER, FLUSH_ROOM, STATS_REBUILD, WAIT, WAIT_RESERVE, WAITS_CHECK,
    OWNER_FORGET, PRIORITY_KEEP, PRIORITY_SETTLE, CLOSURE_WRITE, CLAIM_UNSURE,
    WINDOW_SET,
)  # fmt: skip
