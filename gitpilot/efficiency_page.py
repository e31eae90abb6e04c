"""``git pilot efficiency --html FILE``: the report as one self-contained page.

Inline CSS and inline SVG only: no script, no font, no image, no link to anything outside the
file, so it opens the same offline, from a mail attachment or a CI artefact. The page is a
pure function of the ledger's events (sorted, fixed palette, no clock), so the same ledger
gives the same bytes.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Any

from gitpilot.efficiency import BYTES_PER_TOKEN, ESTIMATE_NOTE, Event, summarize

_PALETTE = ("#2f6fb0", "#d9822b", "#3a9a5b", "#b8453c", "#7b5ea7", "#8c6d46", "#c75f9b", "#6b7785")
_DELIVERED = "#c4cad3"


def _size(n: int) -> str:
    from gitpilot.output import human_size

    return human_size(n)


def colours(names: Sequence[str]) -> dict[str, str]:
    return {name: _PALETTE[i % len(_PALETTE)] for i, name in enumerate(sorted(names))}


def _bars_svg(rows: list[tuple[str, int, int]], colour: dict[str, str], unit: str) -> str:
    """Horizontal bars: per row its main value (coloured) and an optional grey remainder."""
    width, label_w, row_h = 760, 150, 30
    peak = max((a + b for _, a, b in rows), default=0) or 1
    scale = (width - label_w - 150) / peak
    out = [f'<svg class="chart" role="img" width="{width}" height="{row_h * len(rows) + 10}" '
           f'viewBox="0 0 {width} {row_h * len(rows) + 10}">']
    for i, (name, value, rest) in enumerate(rows):
        y = 5 + i * row_h
        w1, w2 = value * scale, rest * scale
        text = _size(value) if unit == "bytes" else f"{value:,}"
        out.append(f'<text x="{label_w - 8}" y="{y + 18}" text-anchor="end">{escape(name)}</text>')
        out.append(f'<rect class="bar" x="{label_w}" y="{y + 4}" width="{w1:.1f}" height="20" '
                   f'fill="{colour.get(name, _PALETTE[0])}"><title>{escape(name)}: {escape(text)}</title></rect>')
        if rest:
            out.append(f'<rect x="{label_w + w1:.1f}" y="{y + 4}" width="{w2:.1f}" height="20" fill="{_DELIVERED}">'
                       f'<title>{escape(name)}: {escape(_size(rest))} delivered</title></rect>')
        out.append(f'<text x="{label_w + w1 + w2 + 6:.1f}" y="{y + 18}">{escape(text)}</text>')
    out.append("</svg>")
    return "".join(out)


def _days(events: Sequence[Event]) -> dict[str, dict[str, int]]:
    """day (YYYY-MM-DD) -> mechanism -> bytes kept out that day."""
    days: dict[str, dict[str, int]] = {}
    for e in events:
        day = e.at[:10] if len(e.at) >= 10 else "unknown"
        per = days.setdefault(day, {})
        per[e.mechanism] = per.get(e.mechanism, 0) + e.avoided
    return dict(sorted(days.items()))


def _timeline_svg(days: dict[str, dict[str, int]], colour: dict[str, str]) -> str:
    """Stacked columns of the bytes kept out per day, one colour per mechanism."""
    width, height, left, bottom = 760, 260, 70, 40
    n = max(len(days), 1)
    col = min(48.0, (width - left - 20) / n)
    peak = max((sum(v.values()) for v in days.values()), default=0) or 1
    scale = (height - bottom - 20) / peak
    out = [f'<svg class="chart" role="img" width="{width}" height="{height}" viewBox="0 0 {width} {height}">',
           f'<line x1="{left}" y1="{height - bottom}" x2="{width - 10}" y2="{height - bottom}" stroke="#888"/>',
           f'<text x="{left - 6}" y="24" text-anchor="end">{escape(_size(peak))}</text>',
           f'<text x="{left - 6}" y="{height - bottom}" text-anchor="end">0</text>']
    for i, (day, per) in enumerate(days.items()):
        x = left + 10 + i * col
        y = float(height - bottom)
        for name in sorted(per):
            h = per[name] * scale
            y -= h
            out.append(f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{col * 0.7:.1f}" height="{h:.1f}" '
                       f'fill="{colour.get(name, _PALETTE[0])}"><title>{escape(day)} {escape(name)}: '
                       f'{escape(_size(per[name]))}</title></rect>')
        if n <= 16 or i % max(1, n // 8) == 0:
            out.append(f'<text x="{x:.1f}" y="{height - bottom + 16}" class="small">{escape(day[5:])}</text>')
    out.append("</svg>")
    return "".join(out)


def _legend(colour: dict[str, str]) -> str:
    items = "".join(f'<span><i style="background:{c}"></i>{escape(n)}</span>' for n, c in colour.items())
    return f'<p class="legend">{items}<span><i style="background:{_DELIVERED}"></i>delivered</span></p>'


def _table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    th = "".join(f"<th>{escape(h)}</th>" for h in head)
    body = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in r) + "</tr>" for r in rows)
    return f"<table><thead><tr>{th}</tr></thead><tbody>{body}</tbody></table>"


_CSS = """
body{font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:2em auto;max-width:820px;color:#1d232b;
background:#fff}h1{font-size:1.6em;margin:0 0 .2em}h2{font-size:1.15em;margin:1.6em 0 .4em}
.totals{display:flex;gap:1.2em;flex-wrap:wrap}.totals div{background:#f2f4f7;border-radius:6px;padding:.6em 1em}
.totals b{display:block;font-size:1.4em}svg.chart{display:block;max-width:100%;height:auto}
svg text{font:12px system-ui,sans-serif;fill:#1d232b}svg text.small{font-size:10px}
table{border-collapse:collapse;width:100%;font-size:.9em}th,td{padding:.25em .6em;border-bottom:1px solid #e3e6ea;
text-align:right}th:first-child,td:first-child{text-align:left}.legend span{margin-right:1em;white-space:nowrap}
.legend i{display:inline-block;width:.9em;height:.9em;margin-right:.3em;vertical-align:-.1em;border-radius:2px}
.note{color:#5a6370;font-size:.85em}
"""


def render_page(events: Sequence[Event], ledger: str, task: str | None = None) -> str:
    """The whole page as text."""
    per, total = summarize(events)
    colour = colours(list(per))
    full = total.delivered + total.avoided
    pct = f"{100.0 * total.avoided / full:.1f}%" if full else "0.0%"
    scope = f" for task {escape(task)}" if task else ""
    parts = [
        "<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>git pilot efficiency{scope}</title><style>{_CSS}</style></head><body>",
        f"<h1>git pilot efficiency{scope}</h1>",
        f'<p class="note">{len(events):,} events from {escape(ledger)}; {escape(ESTIMATE_NOTE)}.</p>',
    ]
    if not events:
        parts.append("<p>No efficiency events recorded yet.</p></body></html>")
        return "\n".join(parts) + "\n"
    parts.append('<div class="totals">'
                 f"<div><b>{escape(_size(total.avoided))}</b>kept out of the agents' context</div>"
                 f"<div><b>{pct}</b>of what would have reached them</div>"
                 f"<div><b>~{total.avoided // BYTES_PER_TOKEN:,}</b>tokens kept out (estimate)</div>"
                 f"<div><b>{total.events:,}</b>times a mechanism acted</div></div>")
    by_kept = sorted(per.items(), key=lambda kv: (-kv[1].avoided, kv[0]))
    parts.append("<h2>Bytes kept out, per mechanism</h2>" + _legend(colour))
    parts.append(_bars_svg([(n, t.avoided, t.delivered) for n, t in by_kept], colour, "bytes"))
    parts.append("<h2>How often each mechanism acted</h2>")
    parts.append(_bars_svg([(n, t.events, 0) for n, t in sorted(per.items(), key=lambda kv: (-kv[1].events, kv[0]))],
                           colour, "count"))
    days = _days(events)
    parts.append("<h2>The ledger over time: bytes kept out per day</h2>")
    parts.append(_timeline_svg(days, colour))
    rows: list[list[str]] = []
    for name, t in [*per.items(), ("total", total)]:
        data: dict[str, Any] = t.to_json()
        rows.append([name, f"{t.events:,}", _size(t.delivered), _size(t.avoided), f"{data['kept_out_percent']:.1f}%",
                     f"{data['avoided_tokens_estimate']:,}"])
    parts.append("<h2>Per mechanism</h2>" + _table(
        ["mechanism", "events", "delivered", "kept out", "kept out %", "~tokens kept out"], rows))
    counted = [f"{n}: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(t.counts.items()))
               for n, t in per.items() if t.counts]
    if counted:
        parts.append("<p>" + "<br>".join(escape(c) for c in counted) + "</p>")
    day_rows = [[day, _size(sum(v.values())), ", ".join(f"{n} {_size(b)}" for n, b in sorted(v.items()))]
                for day, v in days.items()]
    parts.append("<h2>Per day</h2>" + _table(["day", "kept out", "by mechanism"], day_rows))
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
