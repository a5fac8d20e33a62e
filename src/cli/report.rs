//! `--report FILE.html` of `simulate` and `stats`: one self-contained HTML
//! file (inline style, inline SVG, no script, nothing fetched) for people
//! who would rather look than read.
//!
//! Charts, each an `<svg>` with a class naming it and one element per
//! datum, so a test (or a stylesheet) can rely on the structure
//! (docs/cli.md lists it): the minute charts (`svg.attempts`,
//! `svg.pending`) one `rect.bar` per minute (or per declared bucket past
//! [`MAX_BARS`] minutes), a value grid, a time axis with round ticks, a
//! legend and the outage drawn over the bars; `svg.backlog` a bar per age
//! bucket; `svg.schedule` per retry policy, naming what it belongs to; and
//! the engine's own drawing of the process with the fleet's counts on it.
//!
//! The numbers come from the engine (the simulation's report, the store's
//! observations, the policy's worst case); this module only draws them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use qflow_engine::duration::compact_ms;
use qflow_engine::policy::projection::NodeProjection;
use qflow_engine::store::stats::Count;
use qflow_engine::text::group;

/// The most bars a minute chart draws (a day of minutes, each at least
/// [`MIN_SLOT`] pixels wide, the chart scrolling); beyond, one bar per
/// declared bucket of minutes.
pub(crate) const MAX_BARS: usize = 1440;

/// What a report shows.
pub(crate) struct Report<'a> {
    pub title: String,
    /// Label and value rows of the summary table.
    pub summary: Vec<(String, String)>,
    /// Attempts per minute (minute index → attempts).
    pub per_minute: &'a BTreeMap<i64, u64>,
    /// When the outage ended, in minutes (a simulation's), for the shading.
    pub outage_minutes: Option<f64>,
    /// The pending backlog at the end of every minute (a simulation's,
    /// from minute 0); `None`: not shown.
    pub pending: Option<&'a [(i64, u64)]>,
    /// Unfinished instances by age since creation; `None`: not shown.
    pub backlog_age: Option<&'a [Count]>,
    /// Each retry policy with what it belongs to (the deployment, or the
    /// simulated model), which its chart names.
    pub policies: &'a [(String, NodeProjection)],
    /// Process diagrams, each an SVG document, with a caption.
    pub diagrams: Vec<(String, String)>,
    /// Release ramps, each with a caption and its releases per minute
    /// from its minute 0 (what it lets go, the retries it causes).
    pub releases: Vec<(String, BTreeMap<i64, u64>)>,
}

/// Escape text for HTML and SVG content and attribute values.
pub(crate) fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

const STYLE: &str = "
body { font: 14px/1.45 system-ui, sans-serif; color: #222; margin: 2em auto; max-width: 1000px; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 2em; }
table.summary td { padding: 2px 14px 2px 0; } table.summary td:first-child { color: #555; }
p.note { color: #555; }
svg.chart { background: #fafafa; border: 1px solid #ddd; }
svg.chart text { font: 11px sans-serif; fill: #444; }
svg.chart .axis { stroke: #777; stroke-width: 1; }
svg.chart .grid { stroke: #e4e4e4; stroke-width: 1; }
svg.chart .tick { stroke: #777; stroke-width: 1; }
svg.chart text.tick { stroke: none; fill: #555; }
svg.chart .axis-title { fill: #333; font-style: italic; }
svg.attempts .bar, svg.attempts .key.bars { fill: #1565c0; }
svg.chart .outage, svg.chart .key.outage-key { fill: #c62828; fill-opacity: 0.16; stroke: none; }
svg.chart .outage-end { stroke: #c62828; stroke-width: 1.5; stroke-dasharray: 4 3; }
svg.backlog .bar { fill: #ef6c00; }
svg.pending .bar, svg.pending .key.bars { fill: #6a1b9a; }
div.scroll { overflow-x: auto; max-width: 100%; border: 1px solid #ddd; }
div.scroll svg.chart { border: none; }
svg.schedule .line { stroke: #999; stroke-width: 2; }
svg.schedule text.owner { fill: #222; font-weight: bold; }
.legend-html span.swatch { display: inline-block; width: 11px; height: 11px; vertical-align: -1px; margin: 0 4px 0 12px; border-radius: 6px; }
svg.schedule .attempt { fill: #c62828; }
svg.schedule .attempt.last { fill: #6d4c41; }
.diagram svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
";

/// The whole HTML document.
pub(crate) fn html(r: &Report<'_>) -> String {
    let mut s = String::new();
    let _ = write!(
        s,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<h1>{}</h1>\n",
        esc(&r.title),
        esc(&r.title)
    );
    s.push_str("<table class=\"summary\">\n");
    for (k, v) in &r.summary {
        let _ = writeln!(s, "<tr><td>{}</td><td>{}</td></tr>", esc(k), esc(v));
    }
    s.push_str("</table>\n");
    s.push_str("<h2>Attempts per minute</h2>\n");
    s.push_str(&attempts_chart(r.per_minute, r.outage_minutes));
    if let Some(pending) = r.pending {
        s.push_str("<h2>Pending backlog per minute</h2>\n");
        s.push_str("<p class=\"note\">Instances started and not finished (parked for a retry, or waiting) at the end of each minute of virtual time.</p>\n");
        s.push_str(&pending_chart(pending, r.outage_minutes));
    }
    if let Some(ages) = r.backlog_age {
        s.push_str("<h2>Backlog age, by original creation time</h2>\n");
        s.push_str("<p class=\"note\">Unfinished instances by the time since they were created, not since their last attempt: every retry is a fresh execution, the request behind it is as old as the instance.</p>\n");
        s.push_str(&backlog_chart(ages));
    }
    if !r.policies.is_empty() {
        s.push_str("<h2>Retry schedules</h2>\n");
        s.push_str("<p class=\"note\">Each policy's attempts for an instance whose every attempt fails (nominal delays). Scheduled opportunities, not observed requests.</p>\n");
        for (owner, p) in r.policies {
            s.push_str(&schedule_chart(owner, p));
        }
    }
    for (caption, per_minute) in &r.releases {
        let _ = writeln!(s, "<h2>{}</h2>", esc(caption));
        s.push_str("<p class=\"note\">The retries the ramp lets go in each minute from its start, as written in the store (each is one attempt, a channel call's one delivery).</p>\n");
        s.push_str(&attempts_chart(per_minute, None));
    }
    for (caption, svg) in &r.diagrams {
        let _ = write!(
            s,
            "<h2>{}</h2>\n{DIAGRAM_LEGEND}<div class=\"diagram\">\n{}\n</div>\n",
            esc(caption),
            strip_prolog(svg)
        );
    }
    s.push_str("</body>\n</html>\n");
    s
}

/// What the pills on a fleet's diagram count, in their colours (the
/// diagram's own style).
const DIAGRAM_LEGEND: &str = "<p class=\"note legend-html\">Each node says how many instances stand there (waiting, parked for a retry, to reconcile, failed), its outline the gravest:\
<span class=\"swatch\" style=\"background:#1565c0\"></span>waiting\
<span class=\"swatch\" style=\"background:#ef6c00\"></span>parked for a retry\
<span class=\"swatch\" style=\"background:#6a1b9a\"></span>to reconcile\
<span class=\"swatch\" style=\"background:#c62828\"></span>failed there</p>\n";

/// An SVG document without its XML declaration, to sit inline in HTML.
fn strip_prolog(svg: &str) -> &str {
    let t = svg.trim_start();
    match t.strip_prefix("<?xml") {
        Some(rest) => rest
            .split_once("?>")
            .map_or(t, |(_, after)| after.trim_start()),
        None => t,
    }
}

const W: f64 = 960.0;
const H: f64 = 300.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 16.0;
/// Room under the plot: tick labels, then the axis title.
const BOTTOM: f64 = 46.0;
/// Room over the plot: the legend.
const TOP: f64 = 34.0;
/// The narrowest slot a minute's bar gets: a chart of many minutes grows
/// wider (and scrolls) rather than merging minutes.
const MIN_SLOT: f64 = 3.0;

/// One bar per minute from minute 0 to the last minute with an attempt (a
/// minute without one is a gap); past [`MAX_BARS`] minutes, one bar per
/// declared bucket of minutes (the attempts in it), the bucket named in the
/// legend and on the axis.
pub(crate) fn attempts_chart(
    per_minute: &BTreeMap<i64, u64>,
    outage_minutes: Option<f64>,
) -> String {
    let (Some((&first, _)), Some((&last, _))) =
        (per_minute.first_key_value(), per_minute.last_key_value())
    else {
        return empty_chart("attempts", "no attempts");
    };
    let first = first.min(0);
    let bucket = bucket_minutes((last - first + 1) as usize);
    // (first minute of the bucket, attempts in it)
    let mut bars: Vec<(i64, u64)> = Vec::new();
    for (m, n) in per_minute {
        let start = first + (m - first) / bucket * bucket;
        match bars.last_mut() {
            Some(b) if b.0 == start => b.1 += n,
            _ => bars.push((start, *n)),
        }
    }
    let per = if bucket == 1 {
        "minute".to_string()
    } else {
        format!("{bucket} minutes")
    };
    let plot = MinutePlot::new(first, last, bucket, bars.iter().map(|b| b.1).max());
    let mut s = plot.open("attempts");
    plot.grid(&mut s, &format!("attempts per {per}"));
    for (start, n) in &bars {
        plot.bar(
            &mut s,
            *start,
            *n,
            &format!("data-minute=\"{start}\" data-attempts=\"{n}\""),
            &format!(
                "+{}: {} attempts",
                esc(&compact_ms(start * 60_000)),
                group(*n)
            ),
        );
    }
    plot.outage(&mut s, outage_minutes);
    plot.legend(&mut s, &format!("attempts in each {per}"), outage_minutes);
    s.push_str("</svg>\n");
    scrolling(&plot, s)
}

/// The pending backlog: one bar per minute from minute 0 (a minute with
/// nothing pending is a bar of height 0); past [`MAX_BARS`] minutes, one
/// bar per declared bucket, the highest in it.
pub(crate) fn pending_chart(pending: &[(i64, u64)], outage_minutes: Option<f64>) -> String {
    let (Some(&(first, _)), Some(&(last, _))) = (pending.first(), pending.last()) else {
        return empty_chart("pending", "nothing was pending");
    };
    let bucket = bucket_minutes((last - first + 1).max(1) as usize);
    // (first minute of the bucket, highest pending in it)
    let mut bars: Vec<(i64, u64)> = Vec::new();
    for (m, n) in pending {
        let start = first + (m - first) / bucket * bucket;
        match bars.last_mut() {
            Some(b) if b.0 == start => b.1 = b.1.max(*n),
            _ => bars.push((start, *n)),
        }
    }
    let plot = MinutePlot::new(first, last, bucket, bars.iter().map(|b| b.1).max());
    let mut s = plot.open("pending");
    plot.grid(&mut s, "instances pending");
    for (start, n) in &bars {
        plot.bar(
            &mut s,
            *start,
            *n,
            &format!("data-minute=\"{start}\" data-pending=\"{n}\""),
            &format!(
                "+{}: {} pending",
                esc(&compact_ms(start * 60_000)),
                group(*n)
            ),
        );
    }
    plot.outage(&mut s, outage_minutes);
    let what = if bucket == 1 {
        "pending at the end of each minute".to_string()
    } else {
        format!("the most pending in each {bucket} minutes")
    };
    plot.legend(&mut s, &what, outage_minutes);
    s.push_str("</svg>\n");
    scrolling(&plot, s)
}

/// A chart with nothing to draw, saying so.
fn empty_chart(class: &str, why: &str) -> String {
    format!(
        "<svg class=\"chart {class}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"80\" viewBox=\"0 0 {W} 80\">\n<text x=\"{LEFT}\" y=\"44\">{why}</text>\n</svg>\n"
    )
}

/// A chart wider than the page scrolls sideways in its own box.
fn scrolling(plot: &MinutePlot, svg: String) -> String {
    if plot.width > W {
        format!("<div class=\"scroll\">\n{svg}</div>\n")
    } else {
        svg
    }
}

/// Minutes per bar: 1 up to [`MAX_BARS`] minutes, else the smallest round
/// bucket that brings the bars under it.
fn bucket_minutes(minutes: usize) -> i64 {
    [1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440]
        .into_iter()
        .find(|b| minutes.div_ceil(*b as usize) <= MAX_BARS)
        .unwrap_or_else(|| minutes.div_ceil(MAX_BARS).div_ceil(1440) as i64 * 1440)
}

/// A round step for an axis from 0 to `max` with about `ticks` ticks:
/// 1, 2 or 5 times a power of ten.
fn nice_step(max: f64, ticks: f64) -> f64 {
    let raw = (max / ticks).max(1.0);
    let p = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * p)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * p)
}

/// A round step of minutes for a time axis of `span` minutes over `px`
/// pixels, a label at least every 90 pixels apart.
fn time_step(span: f64, px: f64) -> i64 {
    let most = (px / 90.0).max(1.0);
    [
        1, 2, 5, 10, 15, 30, 60, 120, 180, 360, 720, 1440, 2880, 10080,
    ]
    .into_iter()
    .find(|m| span / *m as f64 <= most)
    .unwrap_or(10080 * ((span / most / 10080.0).ceil() as i64).max(1))
}
/// One bar per age bucket.
pub(crate) fn backlog_chart(ages: &[Count]) -> String {
    let (w, h) = (600.0, 220.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"chart backlog\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\">"
    );
    let max = ages.iter().map(|c| c.count).max().unwrap_or(0).max(1);
    let plot_h = h - TOP - BOTTOM;
    let slot = (w - LEFT - 10.0) / ages.len().max(1) as f64;
    for (i, c) in ages.iter().enumerate() {
        let x = LEFT + i as f64 * slot;
        let bh = c.count as f64 / max as f64 * plot_h;
        let _ = writeln!(
            s,
            "<rect class=\"bar\" x=\"{:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{bh:.2}\" data-label=\"{}\" data-count=\"{}\"><title>{}: {}</title></rect>",
            x + slot * 0.1,
            TOP + plot_h - bh,
            slot * 0.8,
            esc(&c.label),
            c.count,
            esc(&c.label),
            group(c.count)
        );
        let _ = writeln!(
            s,
            "<text x=\"{:.2}\" y=\"{}\" text-anchor=\"middle\">{}</text>\n<text x=\"{:.2}\" y=\"{:.2}\" text-anchor=\"middle\">{}</text>",
            x + slot / 2.0,
            h - 10.0,
            esc(&c.label),
            x + slot / 2.0,
            (TOP + plot_h - bh - 4.0).max(TOP),
            group(c.count)
        );
    }
    s.push_str("</svg>\n");
    s
}

/// One policy's timetable: a line from the first attempt to the last
/// one's failure, a circle (numbered above) at each attempt's start, a
/// time axis with round ticks; headed by the node, its dependency and what
/// it belongs to (`owner`: the deployment, or the simulated model), which
/// the chart also carries as `data-owner`.
pub(crate) fn schedule_chart(owner: &str, p: &NodeProjection) -> String {
    let (w, h) = (W, 132.0);
    let wc = &p.projection.worst_case;
    let end_s = wc
        .fails_by
        .or(wc.attempts.last().map(|a| a.fails_at))
        .map_or(1.0, |d| d.as_secs_f64())
        .max(1.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"chart schedule\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" data-node=\"{}\" data-owner=\"{}\">",
        esc(&p.node),
        esc(owner)
    );
    let _ = writeln!(
        s,
        "<text class=\"owner\" x=\"10\" y=\"18\">{}</text>\n<text x=\"10\" y=\"34\">{} ({}): {}</text>",
        esc(owner),
        esc(&p.node),
        esc(&p.dependency),
        esc(&wc.summary())
    );
    let (x0, x1, y) = (LEFT, w - 40.0, 72.0);
    let at = |secs: f64| x0 + secs / end_s * (x1 - x0);
    let _ = writeln!(
        s,
        "<line class=\"line\" x1=\"{x0}\" y1=\"{y}\" x2=\"{:.2}\" y2=\"{y}\"/>",
        at(end_s)
    );
    // The time axis: a tick and a label at every round step.
    let step = [
        1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 10800, 21600, 43200, 86400,
        172800, 604800,
    ]
    .into_iter()
    .find(|st| end_s / *st as f64 <= (x1 - x0) / 90.0)
    .unwrap_or(604800);
    let mut t = 0;
    while t as f64 <= end_s {
        let x = at(t as f64);
        let _ = writeln!(
            s,
            "<line class=\"tick\" x1=\"{x:.1}\" y1=\"{}\" x2=\"{x:.1}\" y2=\"{}\"/><text class=\"tick x\" x=\"{x:.1}\" y=\"{}\" text-anchor=\"middle\">+{}</text>",
            y + 8.0,
            y + 13.0,
            y + 26.0,
            esc(&compact_ms(t * 1000))
        );
        t += step;
    }
    let _ = writeln!(
        s,
        "<text class=\"axis-title x\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">time since the first attempt (d h m s); the last one fails at +{}</text>",
        (x0 + x1) / 2.0,
        h - 8.0,
        esc(&compact_ms((end_s * 1000.0) as i64))
    );
    let n = wc.attempts.len();
    let mut last_label = f64::NEG_INFINITY;
    for (i, a) in wc.attempts.iter().enumerate() {
        let t = a.since_first.as_secs_f64();
        let last = if i + 1 == n && wc.complete {
            " last"
        } else {
            ""
        };
        let cx = at(t);
        let _ = writeln!(
            s,
            "<circle class=\"attempt{last}\" cx=\"{cx:.2}\" cy=\"{y}\" r=\"5\" data-attempt=\"{}\" data-at-s=\"{}\"><title>attempt {} at +{}</title></circle>",
            a.attempt,
            a.since_first.as_secs(),
            a.attempt,
            esc(&compact_ms(a.since_first.as_millis() as i64))
        );
        // Numbered above, where the number clears the one before.
        if cx - last_label >= 18.0 {
            let _ = writeln!(
                s,
                "<text class=\"attempt-number\" x=\"{cx:.1}\" y=\"{}\" text-anchor=\"middle\">#{}</text>",
                y - 10.0,
                a.attempt
            );
            last_label = cx;
        }
    }
    s.push_str("</svg>\n");
    s
}

/// Write a report, whole or not at all (a temporary file renamed into
/// place), or to standard output when the path is `-`.
pub(crate) fn write(path: &std::path::Path, html: &str) -> std::io::Result<()> {
    write_output(path, html, "open it in a browser")
}

/// Whether a file argument names standard output (`-`, as in every Unix tool).
pub(crate) fn is_stdout(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// Write `text` to `path` whole or not at all (a temporary file beside it,
/// renamed into place) and say so on stderr; `-` writes it to standard
/// output instead, and says nothing.
pub(crate) fn write_output(path: &std::path::Path, text: &str, next: &str) -> std::io::Result<()> {
    if is_stdout(path) {
        use std::io::Write;
        let mut out = std::io::stdout().lock();
        out.write_all(text.as_bytes())?;
        return out.flush();
    }
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = std::path::PathBuf::from(tmp);
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, path).inspect_err(|_| {
        let _ = std::fs::remove_file(&tmp);
    })?;
    say_written(path, text.len(), next);
    Ok(())
}

/// Say on stderr which file a command wrote, so a user who gave a path
/// sees where the result went (stdout stays the command's own output,
/// JSON included).
pub(crate) fn say_written(path: &std::path::Path, bytes: usize, next: &str) {
    let size = if bytes >= 10 * 1024 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    };
    eprintln!("wrote {} ({size}): {next}", path.display());
}

/// Where the bars of a chart of one bar per minute (or per `bucket`
/// minutes) go: both minute charts share their geometry, value grid, time
/// axis, outage band and legend.
struct MinutePlot {
    first: i64,
    last: i64,
    bucket: i64,
    /// The top of the value axis (a round number at least the highest bar).
    top: f64,
    step: f64,
    /// The whole chart's width (wider than [`W`] when the minutes need it).
    width: f64,
    plot_w: f64,
    plot_h: f64,
    slot_w: f64,
}

impl MinutePlot {
    fn new(first: i64, last: i64, bucket: i64, max: Option<u64>) -> MinutePlot {
        let slots = ((last - first + 1) as f64 / bucket as f64).ceil().max(1.0);
        let slot_w = ((W - LEFT - RIGHT) / slots).max(MIN_SLOT);
        let plot_w = slot_w * slots;
        let max = max.unwrap_or(1).max(1) as f64;
        let step = nice_step(max, 4.0);
        MinutePlot {
            first,
            last,
            bucket,
            top: (max / step).ceil() * step,
            step,
            width: LEFT + plot_w + RIGHT,
            plot_w,
            plot_h: H - TOP - BOTTOM,
            slot_w,
        }
    }

    fn x(&self, minute: f64) -> f64 {
        LEFT + (minute - self.first as f64) / self.bucket as f64 * self.slot_w
    }

    fn open(&self, class: &str) -> String {
        format!(
            "<svg class=\"chart {class}\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{H}\" viewBox=\"0 0 {w} {H}\">\n",
            w = self.width
        )
    }

    /// The value grid (a labelled line per round step, the axis titled
    /// `what`) and the time axis: a tick and a label every round number of
    /// minutes, titled with its unit.
    fn grid(&self, s: &mut String, what: &str) {
        let base = TOP + self.plot_h;
        let mut v = 0.0;
        while v <= self.top + 0.5 {
            let y = base - v / self.top * self.plot_h;
            let _ = writeln!(
                s,
                "<line class=\"grid\" x1=\"{LEFT}\" y1=\"{y:.1}\" x2=\"{:.1}\" y2=\"{y:.1}\"/><text class=\"tick y\" x=\"{}\" y=\"{:.1}\" text-anchor=\"end\">{}</text>",
                LEFT + self.plot_w,
                LEFT - 6.0,
                y + 4.0,
                group(v as u64)
            );
            v += self.step;
        }
        let _ = writeln!(
            s,
            "<text class=\"axis-title y\" transform=\"translate(14 {:.1}) rotate(-90)\" text-anchor=\"middle\">{}</text>",
            TOP + self.plot_h / 2.0,
            esc(what)
        );
        let _ = writeln!(
            s,
            "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{base}\" x2=\"{:.1}\" y2=\"{base}\"/>",
            LEFT + self.plot_w
        );
        let end = (self.last + 1) as f64;
        let step = time_step(end - self.first as f64, self.plot_w);
        let mut m = self.first.div_euclid(step) * step;
        while (m as f64) <= end {
            if m >= self.first {
                let x = self.x(m as f64);
                let _ = writeln!(
                    s,
                    "<line class=\"tick\" x1=\"{x:.1}\" y1=\"{base}\" x2=\"{x:.1}\" y2=\"{:.1}\"/><text class=\"tick x\" x=\"{x:.1}\" y=\"{:.1}\" text-anchor=\"middle\" data-minute=\"{m}\">+{}</text>",
                    base + 5.0,
                    base + 17.0,
                    esc(&compact_ms(m * 60_000))
                );
            }
            m += step;
        }
        let per = if self.bucket > 1 {
            format!(", one bar per {} minutes", self.bucket)
        } else {
            ", one bar per minute".to_string()
        };
        let _ = writeln!(
            s,
            "<text class=\"axis-title x\" x=\"{:.1}\" y=\"{}\" text-anchor=\"middle\">virtual time since the start (d h m){per}</text>",
            // Centred on what a page shows first of a chart that scrolls.
            LEFT + self.plot_w.min(W - LEFT - RIGHT) / 2.0,
            H - 8.0
        );
    }

    /// The outage, shaded from the first minute to `end` (minutes), over
    /// the bars (translucent, so the bars under it still show).
    fn outage(&self, s: &mut String, end: Option<f64>) {
        let Some(end) = end else { return };
        let x1 = self.x(end).clamp(LEFT, LEFT + self.plot_w);
        let _ = writeln!(
            s,
            "<rect class=\"outage\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{:.1}\" height=\"{:.1}\"><title>outage: the first {}</title></rect>\n<line class=\"outage-end\" x1=\"{x1:.1}\" y1=\"{TOP}\" x2=\"{x1:.1}\" y2=\"{:.1}\"/>",
            x1 - LEFT,
            self.plot_h,
            esc(&compact_ms((end * 60_000.0) as i64)),
            TOP + self.plot_h
        );
    }

    /// One bar of height `n` in the slot of minute `start`, with its data
    /// attributes and its tooltip.
    fn bar(&self, s: &mut String, start: i64, n: u64, data: &str, title: &str) {
        let x = self.x(start as f64);
        let h = n as f64 / self.top * self.plot_h;
        let _ = writeln!(
            s,
            "<rect class=\"bar\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{h:.2}\" {data}><title>{title}</title></rect>",
            TOP + self.plot_h - h,
            (self.slot_w * 0.8).max(1.5),
        );
    }

    /// What the colours mean: the bars, and the outage when there is one.
    fn legend(&self, s: &mut String, bars: &str, outage: Option<f64>) {
        let y = 12.0;
        let _ = write!(
            s,
            "<g class=\"legend\"><rect class=\"key bars\" x=\"{LEFT}\" y=\"{y}\" width=\"12\" height=\"12\"/><text x=\"{}\" y=\"{}\">{}</text>",
            LEFT + 17.0,
            y + 10.0,
            esc(bars)
        );
        if let Some(end) = outage {
            let x = LEFT + 30.0 + bars.chars().count() as f64 * 6.2;
            let _ = write!(
                s,
                "<rect class=\"key outage-key\" x=\"{x:.1}\" y=\"{y}\" width=\"12\" height=\"12\"/><text x=\"{:.1}\" y=\"{}\">outage: the dependency down for the first {}</text>",
                x + 17.0,
                y + 10.0,
                esc(&qflow_engine::duration::to_words(std::time::Duration::from_secs_f64(end * 60.0)))
            );
        }
        s.push_str("</g>\n");
    }
}
