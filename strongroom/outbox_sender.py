"""The mail sender of every web process: a thread that runs a pass (`outbox_send`) when this
process queued mail (`strongroom.outbox.sender_wake`) and a full one every SENDER_PERIOD_S, with
the `SENDER_HOOKS` run by one process per period."""

from __future__ import annotations

import atexit
import logging
import threading
import time
from collections.abc import Sequence

import redis

from strongroom import keyspace as ks
from strongroom.outbox import (
    BATCH,
    CONSUMER,
    EVERY_BOX,
    SENDER_HOOKS,
    sender_event,
    sender_wake,
    sender_woken,
)
from strongroom.outbox_delivery import SendReport, outbox_send
from strongroom.store import UNAVAILABLE, StoreUnavailable

logger = logging.getLogger(__name__)

SENDER_PERIOD_S = 5.0
SENDER_GAP_S = 0.2  # at least this long between two passes of a process's sender, bar backlogs
SENDER_RETRY_S = 1.0  # after a pass that found no store

SENDER_EXIT_WAIT_S = 8.0
_thread: threading.Thread | None = None
_stop: threading.Event | None = None
_thread_lock = threading.Lock()


def _hooks_run(client: redis.Redis) -> None:
    # The hooks' turn passes from process to process: the first to ask in a period runs them.
    # (Its expiry is the period itself, never released: a crash costs nothing.)
    hooks = list(SENDER_HOOKS)
    if hooks and client.set(ks.MAIL_SWEEP.key(), CONSUMER, nx=True, px=int(SENDER_PERIOD_S * 1000)):
        for hook in hooks:
            hook(client)


def sender_pass(
    *,
    client: redis.Redis,
    boxes: Sequence[str] | None = None,
    stop: threading.Event | None = None,
) -> SendReport:
    """One pass: a full one (no `boxes`) runs the hooks when it is their turn, then reads every
    outbox; else only `boxes`. Once `stop` is set it begins no further message."""
    if boxes is None:
        _hooks_run(client)
    return outbox_send(client=client, boxes=boxes, stop=stop)


def sender_pause(report: SendReport | None) -> float:
    """How long the sender rests after a pass (`report`; None: it failed): not at all after a
    full batch, as more may be due; else SENDER_GAP_S, so that wakes within it share the next
    pass (a burst of bookings costs a few reads of the outboxes it wrote to a second, not one per
    booking); SENDER_RETRY_S after a failed pass."""
    if report is None:
        return SENDER_RETRY_S
    return 0.0 if report.handled >= BATCH or report.more else SENDER_GAP_S


def sender_boxes(woken: set[str], *, full_due: bool) -> list[str] | None:
    """The outboxes a pass reads: None (all of them) when a full pass is due or was asked for,
    else the woken ones."""
    return None if full_due or EVERY_BOX in woken else sorted(woken)


def sender_loop(*, stop: threading.Event) -> None:
    """The sender: a pass when woken, a full one every SENDER_PERIOD_S, until `stop` is set."""
    from strongroom.store import get_store

    last_full = float("-inf")  # the first pass reads every outbox
    away = False  # the store was away on the last pass: said once, not every second
    while not stop.is_set():
        sender_event.wait(SENDER_PERIOD_S)
        if stop.is_set():
            break
        sender_event.clear()
        woken = sender_woken()
        # After a failed pass, every outbox: what was woken meanwhile may be anywhere.
        full_due = away or time.monotonic() - last_full >= SENDER_PERIOD_S
        boxes = sender_boxes(woken, full_due=full_due)
        if boxes == []:
            continue
        report: SendReport | None = None
        try:
            report = sender_pass(client=get_store(), boxes=boxes, stop=stop)
        except (*UNAVAILABLE, StoreUnavailable) as exc:  # store down or stalled: one line, no trace
            if not away:
                logger.warning("the mail sender found no store (%s); trying every second", exc)
        except Exception:
            logger.warning("the mail sender's pass failed; trying again", exc_info=True)
        else:
            if away:
                logger.warning("the mail sender found the store again")
        away = report is None
        if report is not None and boxes is None:
            last_full = time.monotonic()
        if report is not None and (report.handled >= BATCH or report.more):
            sender_wake(*(report.more or woken or ()))
        pause = sender_pause(report)
        if pause:
            time.sleep(pause)
        if report is None or not pause:
            sender_event.set()


def sender_start() -> None:
    """Start this process's sender thread once (STRONGROOM_MAIL_SENDER)."""
    global _thread, _stop
    with _thread_lock:
        if _thread is None or not _thread.is_alive():
            _stop = threading.Event()
            _thread = threading.Thread(
                target=sender_loop,
                kwargs={"stop": _stop},
                name="mail-sender",
                daemon=True,
            )
            _thread.start()


def sender_stop_soon() -> None:
    """Tell the sender to stop after the message under way, without waiting (a worker's
    SIGTERM handler: it winds down with the requests, within gunicorn's graceful timeout)."""
    if _stop is not None:
        _stop.set()
        sender_event.set()


@atexit.register
def sender_stop(timeout_s: float = SENDER_EXIT_WAIT_S) -> bool:
    """At the process's exit, the sender finishes the message it is sending (the mail server
    took it: its acknowledgement is written) and begins no other. Without this a worker that
    left at once (gunicorn's "Parent changed" after its master was killed) cut the thread off
    between the mail server's yes and the acknowledgement, and the next sender sent that mail
    again. Returns whether the thread ended within `timeout_s` (below gunicorn's 10 s grace)."""
    thread, stop = _thread, _stop
    if thread is None or stop is None or not thread.is_alive():
        return True
    stop.set()
    sender_event.set()  # out of its wait for work
    thread.join(timeout=timeout_s)
    if thread.is_alive():
        logger.warning(
            "the mail sender did not stop within %s s: its message may go again", timeout_s
        )
    return not thread.is_alive()
