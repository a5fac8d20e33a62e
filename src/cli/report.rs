//! `--report FILE.html` of `simulate` and `stats`: one self-contained HTML
//! file (inline style, inline SVG, no script, nothing fetched) for people
//! who would rather look than read.
//!
//! Charts, each an `<svg>` with a class naming it and one element per
//! datum, so a test (or a stylesheet) can rely on the structure:
//!
//! - `svg.attempts`: attempts per minute, one `rect.bar` per minute (or per
//!   span of minutes when there are more than [`MAX_BARS`], each showing its
//!   busiest minute), `data-minute`/`data-attempts` on each; the outage as
//!   `rect.outage`.
//! - `svg.pending` (a simulation's): the pending backlog (unfinished
//!   instances) at the end of each minute, one `rect.bar` per minute (or
//!   per span when there are more than [`MAX_BARS`], each showing the
//!   span's highest), `data-minute` (the span's first)/`data-pending` on
//!   each; the outage as `rect.outage`.
//! - `svg.backlog`: unfinished instances by age since creation, one
//!   `rect.bar` per bucket with `data-label`/`data-count`.
//! - `svg.schedule` per retry policy: one `circle.attempt` per attempt of an
//!   always-failing instance at its start (`data-attempt`, `data-at-s`), on a
//!   line from the first attempt to the last one's failure.
//! - the process diagram, the engine's own SVG drawing (`qflow render`).
//!
//! The numbers come from the engine (the simulation's report, the store's
//! observations, the policy's worst case); this module only draws them.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use qflow_engine::duration::compact_ms;
use qflow_engine::policy::projection::NodeProjection;
use qflow_engine::store::stats::Count;
use qflow_engine::text::group;

/// The most bars the attempts chart draws; beyond, spans of minutes.
pub const MAX_BARS: usize = 240;

/// What a report shows.
pub struct Report<'a> {
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
    pub policies: &'a [NodeProjection],
    /// Process diagrams, each an SVG document, with a caption.
    pub diagrams: Vec<(String, String)>,
}

/// Escape text for HTML and SVG content and attribute values.
pub fn esc(s: &str) -> String {
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
svg.chart .axis { stroke: #999; stroke-width: 1; }
svg.attempts .bar { fill: #1565c0; }
svg.attempts .outage { fill: #ffebee; }
svg.backlog .bar { fill: #ef6c00; }
svg.pending .bar { fill: #6a1b9a; }
svg.pending .outage { fill: #ffebee; }
svg.schedule .line { stroke: #999; stroke-width: 2; }
svg.schedule .attempt { fill: #c62828; }
svg.schedule .attempt.last { fill: #6d4c41; }
.diagram svg { max-width: 100%; height: auto; border: 1px solid #ddd; }
";

/// The whole HTML document.
pub fn html(r: &Report<'_>) -> String {
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
        for p in r.policies {
            s.push_str(&schedule_chart(p));
        }
    }
    for (caption, svg) in &r.diagrams {
        let _ = write!(
            s,
            "<h2>{}</h2>\n<div class=\"diagram\">\n{}\n</div>\n",
            esc(caption),
            strip_prolog(svg)
        );
    }
    s.push_str("</body>\n</html>\n");
    s
}

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
const H: f64 = 260.0;
const LEFT: f64 = 60.0;
const BOTTOM: f64 = 30.0;
const TOP: f64 = 14.0;

/// One bar per minute from the first to the last minute with an attempt
/// (a minute without one is a gap), or per span when there are more than
/// [`MAX_BARS`] minutes, each the span's busiest minute.
pub fn attempts_chart(per_minute: &BTreeMap<i64, u64>, outage_minutes: Option<f64>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"chart attempts\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">"
    );
    let (Some((&first, _)), Some((&last, _))) =
        (per_minute.first_key_value(), per_minute.last_key_value())
    else {
        let _ = write!(
            s,
            "<text x=\"{LEFT}\" y=\"{}\">no attempts</text>\n</svg>\n",
            H / 2.0
        );
        return s;
    };
    let first = first.min(0);
    let span = (last - first + 1) as usize;
    let width = span.div_ceil(MAX_BARS) as i64;
    // (start minute, busiest minute, attempts)
    let mut bars: Vec<(i64, i64, u64)> = Vec::new();
    for (m, n) in per_minute {
        let start = first + (m - first) / width * width;
        match bars.last_mut() {
            Some(b) if b.0 == start => {
                if *n > b.2 {
                    b.1 = *m;
                    b.2 = *n;
                }
            }
            _ => bars.push((start, *m, *n)),
        }
    }
    let plot = MinutePlot::new(first, span, width, bars.iter().map(|b| b.2).max());
    plot.outage(&mut s, outage_minutes);
    for (start, busiest, n) in &bars {
        plot.bar(
            &mut s,
            *start,
            *n,
            &format!("data-minute=\"{busiest}\" data-attempts=\"{n}\""),
            &format!(
                "+{}: {} attempts",
                esc(&compact_ms(busiest * 60_000)),
                group(*n)
            ),
        );
    }
    plot.axes(&mut s, last, &format!("the busiest minute of {width}"));
    s
}

/// The pending backlog: one bar per minute from minute 0 (a minute with
/// nothing pending is a bar of height 0), or per span of minutes when there
/// are more than [`MAX_BARS`], each showing the span's highest.
pub fn pending_chart(pending: &[(i64, u64)], outage_minutes: Option<f64>) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"chart pending\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{W}\" height=\"{H}\" viewBox=\"0 0 {W} {H}\">"
    );
    let (Some(&(first, _)), Some(&(last, _))) = (pending.first(), pending.last()) else {
        let _ = write!(
            s,
            "<text x=\"{LEFT}\" y=\"{}\">nothing was pending</text>\n</svg>\n",
            H / 2.0
        );
        return s;
    };
    let span = (last - first + 1).max(1) as usize;
    let width = span.div_ceil(MAX_BARS) as i64;
    // (first minute of the span, highest pending in it)
    let mut bars: Vec<(i64, u64)> = Vec::new();
    for (m, n) in pending {
        let start = first + (m - first) / width * width;
        match bars.last_mut() {
            Some(b) if b.0 == start => b.1 = b.1.max(*n),
            _ => bars.push((start, *n)),
        }
    }
    let plot = MinutePlot::new(first, span, width, bars.iter().map(|b| b.1).max());
    plot.outage(&mut s, outage_minutes);
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
    plot.axes(&mut s, last, &format!("the highest of {width} minutes"));
    s
}

/// One bar per age bucket.
pub fn backlog_chart(ages: &[Count]) -> String {
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
/// one's failure, a circle at each attempt's start.
pub fn schedule_chart(p: &NodeProjection) -> String {
    let (w, h) = (W, 120.0);
    let wc = &p.projection.worst_case;
    let end_s = wc
        .fails_by
        .or(wc.attempts.last().map(|a| a.fails_at))
        .map_or(1.0, |d| d.as_secs_f64())
        .max(1.0);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "<svg class=\"chart schedule\" xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" viewBox=\"0 0 {w} {h}\" data-node=\"{}\">",
        esc(&p.node)
    );
    let _ = writeln!(
        s,
        "<text x=\"10\" y=\"18\">{} ({}): {}</text>",
        esc(&p.node),
        esc(&p.dependency),
        esc(&wc.summary())
    );
    let (x0, x1, y) = (LEFT, w - 40.0, 64.0);
    let at = |secs: f64| x0 + secs / end_s * (x1 - x0);
    let _ = writeln!(
        s,
        "<line class=\"line\" x1=\"{x0}\" y1=\"{y}\" x2=\"{:.2}\" y2=\"{y}\"/>",
        at(end_s)
    );
    let n = wc.attempts.len();
    for (i, a) in wc.attempts.iter().enumerate() {
        let t = a.since_first.as_secs_f64();
        let last = if i + 1 == n && wc.complete {
            " last"
        } else {
            ""
        };
        let _ = writeln!(
            s,
            "<circle class=\"attempt{last}\" cx=\"{:.2}\" cy=\"{y}\" r=\"5\" data-attempt=\"{}\" data-at-s=\"{}\"><title>attempt {} at +{}</title></circle>",
            at(t),
            a.attempt,
            a.since_first.as_secs(),
            a.attempt,
            esc(&compact_ms(a.since_first.as_millis() as i64))
        );
    }
    let _ = writeln!(
        s,
        "<text x=\"{x0}\" y=\"96\">+0s</text>\n<text x=\"{x1}\" y=\"96\" text-anchor=\"end\">+{}</text>",
        esc(&compact_ms((end_s * 1000.0) as i64))
    );
    s.push_str("</svg>\n");
    s
}

/// Write a report, whole or not at all (a temporary file renamed into
/// place), or to standard output when the path is `-`.
pub fn write(path: &std::path::Path, html: &str) -> std::io::Result<()> {
    write_output(path, html, "open it in a browser")
}

/// Whether a file argument names standard output (`-`, as in every Unix tool).
pub fn is_stdout(path: &std::path::Path) -> bool {
    path.as_os_str() == "-"
}

/// Write `text` to `path` whole or not at all (a temporary file beside it,
/// renamed into place) and say so on stderr; `-` writes it to standard
/// output instead, and says nothing.
pub fn write_output(path: &std::path::Path, text: &str, next: &str) -> std::io::Result<()> {
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
pub fn say_written(path: &std::path::Path, bytes: usize, next: &str) {
    let size = if bytes >= 10 * 1024 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    };
    eprintln!("wrote {} ({size}): {next}", path.display());
}

/// Where the bars of a chart of one bar per minute (or per `width`
/// minutes) go: both minute charts share their geometry, outage band, bar
/// shape and axes.
struct MinutePlot {
    first: i64,
    width: i64,
    max: u64,
    plot_w: f64,
    plot_h: f64,
    slot_w: f64,
}

impl MinutePlot {
    fn new(first: i64, span: usize, width: i64, max: Option<u64>) -> MinutePlot {
        let slots = span.div_ceil(width as usize) as f64;
        let plot_w = W - LEFT - 10.0;
        MinutePlot {
            first,
            width,
            max: max.unwrap_or(1).max(1),
            plot_w,
            plot_h: H - TOP - BOTTOM,
            slot_w: plot_w / slots,
        }
    }

    /// The outage shaded from the first minute to `end` (minutes).
    fn outage(&self, s: &mut String, end: Option<f64>) {
        let Some(end) = end else { return };
        let x1 =
            ((end - self.first as f64) / self.width as f64 * self.slot_w).clamp(0.0, self.plot_w);
        let _ = writeln!(
            s,
            "<rect class=\"outage\" x=\"{LEFT}\" y=\"{TOP}\" width=\"{x1:.1}\" height=\"{:.1}\"><title>outage: first {} </title></rect>",
            self.plot_h,
            esc(&compact_ms((end * 60_000.0) as i64))
        );
    }

    /// One bar of height `n` in the slot of minute `start`, with its data
    /// attributes and its tooltip.
    fn bar(&self, s: &mut String, start: i64, n: u64, data: &str, title: &str) {
        let x = LEFT + (start - self.first) as f64 / self.width as f64 * self.slot_w;
        let h = n as f64 / self.max as f64 * self.plot_h;
        let _ = writeln!(
            s,
            "<rect class=\"bar\" x=\"{x:.2}\" y=\"{:.2}\" width=\"{:.2}\" height=\"{h:.2}\" {data}><title>{title}</title></rect>",
            TOP + self.plot_h - h,
            (self.slot_w * 0.9).max(0.5),
        );
    }

    /// The axis, the value scale and the first and last minute, and the
    /// closing tag; a bar of several minutes is what `each` says.
    fn axes(&self, s: &mut String, last: i64, each: &str) {
        let base = TOP + self.plot_h;
        let _ = writeln!(
            s,
            "<line class=\"axis\" x1=\"{LEFT}\" y1=\"{base}\" x2=\"{}\" y2=\"{base}\"/>",
            W - 10.0
        );
        let _ = writeln!(
            s,
            "<text x=\"4\" y=\"{}\">{}</text>\n<text x=\"4\" y=\"{base}\">0</text>",
            TOP + 10.0,
            group(self.max)
        );
        let _ = writeln!(
            s,
            "<text x=\"{LEFT}\" y=\"{}\">+{}</text>\n<text x=\"{}\" y=\"{}\" text-anchor=\"end\">+{}{}</text>",
            H - 10.0,
            esc(&compact_ms(self.first * 60_000)),
            W - 10.0,
            H - 10.0,
            esc(&compact_ms(last * 60_000)),
            if self.width > 1 {
                format!(" (each bar: {each})")
            } else {
                String::new()
            }
        );
        s.push_str("</svg>\n");
    }
}
