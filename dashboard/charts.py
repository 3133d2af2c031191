"""A small server-side SVG bar chart: geometry computed here, drawn by a template."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class Bar:
    label: str
    value: int
    x: float
    y: float
    width: float
    height: float
    label_x: float
    show_label: bool
    minor_label: bool = False  # every other shown label: left out where space is short


@dataclass(frozen=True)
class Tick:
    value: int
    y: float


@dataclass(frozen=True)
class BarChart:
    """What `templates/dashboard/_bar_chart.html` draws: an SVG and the same numbers as a table."""

    chart_id: str
    title: str
    value_label: str
    width: int
    height: int
    plot_left: int
    plot_bottom: int
    plot_top: int
    bars: tuple[Bar, ...]
    ticks: tuple[Tick, ...]

    @property
    def total(self) -> int:
        return sum(bar.value for bar in self.bars)


def _nice_top(peak: int) -> int:
    """A round axis maximum at or above `peak` (1, 2, 5 x 10^n)."""
    if peak <= 0:
        return 1
    step = 1
    while True:
        for factor in (1, 2, 5):
            if step * factor >= peak:
                return step * factor
        step *= 10


def _tick_step(axis_top: int) -> int:
    """A round whole step (1, 2, 25 or 5 x 10^n) dividing `axis_top` into at most 5 parts, so
    that every tick sits exactly at the value it shows (5 in 4 parts would show 1.25 as 1)."""
    for parts in (5, 4, 2, 1):
        step, rest = divmod(axis_top, parts)
        if not rest and str(step).rstrip("0") in ("1", "2", "25", "5"):
            return step
    return axis_top


def bar_chart(
    *,
    chart_id: str,
    title: str,
    value_label: str,
    points: Sequence[tuple[str, int]],
    width: int = 720,
    height: int = 220,
    label_every: int = 0,
    last_labelled: bool = False,
) -> BarChart:
    """Lay out one bar per point (label, value) on a 0..nice maximum axis with whole ticks.
    Every `label_every`-th bar is labelled, from the first, or with `last_labelled` from the
    last (a chart that ends today: its last bar is the one looked for)."""
    left, right, top, bottom = 40, 8, 10, height - 28
    plot_width = width - left - right
    peak = max((value for _, value in points), default=0)
    axis_top = _nice_top(peak)
    slot = plot_width / max(1, len(points))
    every = label_every or max(1, -(-len(points) // 12))
    bars = []
    for index, (label, value) in enumerate(points):
        place = len(points) - 1 - index if last_labelled else index
        bar_height = (bottom - top) * max(0, value) / axis_top
        x = left + index * slot + slot * 0.15
        bars.append(
            Bar(
                label=label,
                value=value,
                x=round(x, 2),
                y=round(bottom - bar_height, 2),
                width=round(slot * 0.7, 2),
                height=round(bar_height, 2),
                label_x=round(left + index * slot + slot / 2, 2),
                show_label=place % every == 0,
                minor_label=place % (2 * every) == every,
            )
        )
    step = _tick_step(axis_top)
    ticks = tuple(
        Tick(value=value, y=round(bottom - (bottom - top) * value / axis_top, 2))
        for value in range(0, axis_top + 1, step)
    )
    return BarChart(chart_id, title, value_label, width, height, left, bottom, top, tuple(bars),
                    ticks)  # fmt: skip
