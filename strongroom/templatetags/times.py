"""`{{ moment|minute_up }}`: an end rounded up to the minute before it is shown as HH:MM: the
end of something the reader waits for (another buyer's hold, a pause). The end of the reader's
own hold is shown as `date:"H:i"` shows it, the minute it falls in: never later than it is.
A hold ends on a whole minute (booking/README.md), so its holder and the others read one time."""

from __future__ import annotations

import datetime as dt

from django import template

from strongroom.clock import minute_up as _minute_up

register = template.Library()


@register.filter
def minute_up(moment: dt.datetime | None) -> dt.datetime | None:
    return _minute_up(moment) if isinstance(moment, dt.datetime) else moment
