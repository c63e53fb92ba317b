//! The HTML report's pictures of a burst (issue 15): per burst, latency and
//! throughput over time (the interval log's one-second intervals), and per
//! distribution (all requests, then each request kind) the latency by
//! percentile, raw and corrected, on the axis HdrHistogram's plotter uses
//! (x = 1/(1-percentile), log-scaled, ticks 0%, 90%, 99%, 99.9% ...).
//!
//! Drawn by plotters' SVG backend and inlined: no script, no font file, no
//! URL to fetch (text names the generic `sans-serif` family), so the page
//! renders offline and prints. Names from the suite never enter the drawing;
//! they appear only in the escaped `<title>` and caption.

use std::error::Error;
use std::fmt::Write as _;

use plotters::coord::ranged1d::AsRangedCoord;
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::families::load::summary::{BurstFigures, Distribution, IntervalPoint, PercentilePoint};

/// Drawing size in CSS pixels: 720 is the width of an A4 page's text block
/// at 96 dpi; the page scales it down when narrower (`max-width:100%`).
const WIDTH: u32 = 720;
const DISTRIBUTION_HEIGHT: u32 = 340;
const TIMELINE_HEIGHT: u32 = 440;

/// Series colours; a colour-blind-safe pair for raw against corrected.
pub const RAW: RGBColor = RGBColor(0x1f, 0x77, 0xb4);
pub const CORRECTED: RGBColor = RGBColor(0xd6, 0x27, 0x28);
const MEDIAN: RGBColor = RGBColor(0x2c, 0xa0, 0x2c);
const THROUGHPUT: RGBColor = RGBColor(0x94, 0x67, 0xbd);
const ERRORS: RGBColor = RGBColor(0x33, 0x33, 0x33);

type DrawResult = Result<(), Box<dyn Error>>;
/// A chart drawn into an SVG string, latency or rate (f64) upwards.
type Chart<'a, 'b, X> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<X, RangedCoordf64>>;
/// A line of the timeline: its legend label, colour and value per interval.
type IntervalSeries = (&'static str, RGBColor, fn(&IntervalPoint) -> f64);

/// The `Burst plots` section for every burst that ran; empty when none did.
/// `esc` escapes and redacts text for HTML (the report's own escaper).
pub fn section(figures: &[BurstFigures], esc: &dyn Fn(&str) -> String) -> String {
    if figures.is_empty() {
        return String::new();
    }
    let mut h = String::from("<section class=\"plots\"><h2>Burst plots</h2><p class=\"meta\">Corrected latency counts the time a request waited behind a slow answer since its scheduled send (coordinated omission); raw counts from the actual send. Percentile axes are drawn as HdrHistogram plots them: each step to the right is ten times rarer.</p>");
    for f in figures {
        let name = format!("{} / {}", f.suite, f.load);
        let _ = write!(h, "<div class=\"burst\"><h3>{}</h3>", esc(&name));
        figure(
            &mut h,
            esc,
            &format!("{name}: latency and throughput over time"),
            "latency (corrected p50 and p99, raw p99) and answers per second, one point per second of the burst",
            f.intervals.iter().any(|i| i.requests > 0),
            |buf| timeline(buf, &f.intervals),
        );
        // The target's own signals, beside the latency they explain.
        if let Some((obs, limits)) = &f.observed {
            for series in &obs.series {
                let caption = format!(
                    "{}: `{}` from {}, seconds since the burst began; the shaded band is the burst{}",
                    series.name,
                    series.query,
                    obs.source,
                    if limits.iter().any(|(n, _)| n == &series.name) {
                        ", dashed lines the thresholds' limits"
                    } else {
                        ""
                    }
                );
                let mine: Vec<f64> = limits
                    .iter()
                    .filter(|(n, _)| n == &series.name)
                    .map(|(_, l)| *l)
                    .collect();
                figure(
                    &mut h,
                    esc,
                    &format!("{name}: the target's {} over time", series.name),
                    &caption,
                    true,
                    |buf| match &series.error {
                        Some(e) => Err(e.clone().into()),
                        None => observed(buf, &series.points, obs.end_s, &mine),
                    },
                );
            }
        }
        // With one request kind, its distribution is the burst's.
        let shown: &[Distribution] = if f.distributions.len() == 2 {
            &f.distributions[..1]
        } else {
            &f.distributions
        };
        for d in shown {
            let label = if f.distributions.len() == 2 {
                f.distributions[1].name.as_str()
            } else {
                d.name.as_str()
            };
            figure(
                &mut h,
                esc,
                &format!("{name}: {label}: latency by percentile"),
                &format!(
                    "{label}: raw and corrected latency by percentile, {} requests",
                    d.requests
                ),
                d.requests > 0,
                |buf| distribution(buf, d),
            );
        }
        h.push_str("</div>");
    }
    h.push_str("</section>");
    h
}

/// One `<figure>`: the SVG with a `<title>`, or a line saying why there is none.
fn figure(
    h: &mut String,
    esc: &dyn Fn(&str) -> String,
    title: &str,
    caption: &str,
    has_data: bool,
    draw: impl FnOnce(&mut String) -> DrawResult,
) {
    h.push_str("<figure class=\"plot\">");
    let mut svg = String::new();
    let drawn = if has_data {
        draw(&mut svg).map_err(|e| e.to_string())
    } else {
        Err("no request was answered".to_owned())
    };
    match drawn {
        Ok(()) => h.push_str(&titled(&svg, &esc(title))),
        Err(why) => {
            let _ = write!(h, "<p class=\"meta\">No plot: {}</p>", esc(&why));
        }
    }
    let _ = write!(h, "<figcaption>{}</figcaption></figure>", esc(caption));
}

/// Gives plotters' `<svg>` a title (read out by screen readers, shown on
/// hover) and lets the page scale it to the column's width.
fn titled(svg: &str, title: &str) -> String {
    let svg = svg.trim_start();
    let Some(open_end) = svg.find('>') else {
        return svg.to_owned();
    };
    let open = svg[..open_end].replacen(
        "<svg ",
        "<svg role=\"img\" style=\"max-width:100%;height:auto\" ",
        1,
    );
    format!("{open}><title>{title}</title>{}", &svg[open_end + 1..])
}

/// The percentile axis label of x = 1/(1-p): 1 → `0%`, 10 → `90%`,
/// 1000 → `99.9%`.
pub fn percentile_label(x: f64) -> String {
    let decades = x.log10().round().max(0.0) as usize;
    if decades == 0 {
        return "0%".into();
    }
    let p = 100.0 * (1.0 - 1.0 / x);
    format!("{p:.*}%", decades.saturating_sub(2))
}

/// Where a quantile lies on the percentile axis; the maximum (q = 1) is
/// drawn at the axis's end.
fn percentile_x(q: f64, x_max: f64) -> f64 {
    if q >= 1.0 {
        x_max
    } else {
        (1.0 / (1.0 - q)).clamp(1.0, x_max)
    }
}

/// The axis reaches the decade where the rarest measured percentile lies:
/// 1000 requests reach 99.9%; at least 99%, at most 99.9999%.
fn percentile_decades(requests: u64) -> i32 {
    ((requests.max(1) as f64).log10().ceil() as i32).clamp(2, 6)
}

fn distribution(buf: &mut String, d: &Distribution) -> DrawResult {
    percentile_chart(
        buf,
        d.requests,
        &[(&d.raw, RAW, "raw"), (&d.corrected, CORRECTED, "corrected")],
    )
}

/// A labelled percentile series: its points, colour and legend label.
type PercentileSeries<'a> = (&'a [PercentilePoint], RGBColor, &'static str);

/// Latency by percentile of `series` in one chart, the axis reaching the
/// decade `requests` measure.
fn percentile_chart(
    buf: &mut String,
    requests: u64,
    series: &[PercentileSeries<'_>],
) -> DrawResult {
    let decades = percentile_decades(requests);
    let x_max = 10f64.powi(decades);
    let y_max = series
        .iter()
        .flat_map(|(points, _, _)| points.iter())
        .map(|p| p.ms)
        .fold(0.0, f64::max);
    let root = SVGBackend::with_string(buf, (WIDTH, DISTRIBUTION_HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let ticks: Vec<f64> = (0..=decades).map(|k| 10f64.powi(k)).collect();
    let mut chart = frame(
        &root,
        "latency by percentile",
        (1f64..x_max).log_scale().with_key_points(ticks),
        y_max,
    )?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .x_desc("percentile")
        .y_desc("latency (ms)")
        .x_label_formatter(&|x| percentile_label(*x))
        .draw()?;
    for (points, color, label) in series {
        let points = points
            .iter()
            .map(|&PercentilePoint { quantile, ms }| (percentile_x(quantile, x_max), ms));
        line(&mut chart, points, label, *color)?;
    }
    legend(&mut chart)?;
    root.present()?;
    Ok(())
}

/// `tminus compare`'s picture of one request kind (or all requests): the
/// baseline's and the run's corrected latency by percentile in one chart,
/// as a `<figure>` with `title` and `caption` (escaped with `esc`).
pub fn comparison_figure(
    esc: &dyn Fn(&str) -> String,
    title: &str,
    caption: &str,
    baseline: &Distribution,
    run: &Distribution,
) -> String {
    let mut h = String::new();
    figure(
        &mut h,
        esc,
        title,
        caption,
        baseline.requests > 0 && run.requests > 0,
        |buf| {
            percentile_chart(
                buf,
                baseline.requests.max(run.requests),
                &[
                    (&baseline.corrected, RAW, "baseline (corrected)"),
                    (&run.corrected, CORRECTED, "run (corrected)"),
                ],
            )
        },
    );
    h
}

fn timeline(buf: &mut String, intervals: &[IntervalPoint]) -> DrawResult {
    let end = intervals
        .iter()
        .map(|i| i.start_s + i.len_s)
        .fold(1.0, f64::max);
    let root = SVGBackend::with_string(buf, (WIDTH, TIMELINE_HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let (upper, lower) = root.split_vertically(TIMELINE_HEIGHT * 11 / 20);
    // x: the end of each interval, when its figures were known.
    let at = |i: &IntervalPoint| i.start_s + i.len_s;
    let answered: Vec<&IntervalPoint> = intervals.iter().filter(|i| i.requests > 0).collect();

    let latency_max = answered
        .iter()
        .map(|i| i.corrected_p99_ms.max(i.raw_p99_ms))
        .fold(0.0, f64::max);
    let mut chart = frame(&upper, "latency over time", 0f64..end, latency_max)?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .y_desc("latency (ms)")
        .x_label_formatter(&|s| format!("{s:.0} s"))
        .draw()?;
    let series: [IntervalSeries; 3] = [
        // Raw first, so corrected is drawn over it where they meet.
        ("raw p99", RAW, |i| i.raw_p99_ms),
        ("corrected p99", CORRECTED, |i| i.corrected_p99_ms),
        ("corrected p50", MEDIAN, |i| i.corrected_p50_ms),
    ];
    for (label, color, value) in series {
        let points = answered.iter().map(|i| (at(i), value(i)));
        line(&mut chart, points, label, color)?;
    }
    legend(&mut chart)?;

    let rate_max = intervals
        .iter()
        .map(IntervalPoint::rate)
        .fold(0.0, f64::max);
    let mut chart = frame(&lower, "throughput over time", 0f64..end, rate_max)?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .x_desc("seconds since the burst started")
        .y_desc("per second")
        .x_label_formatter(&|s| format!("{s:.0} s"))
        .draw()?;
    let series: [IntervalSeries; 2] = [
        ("answered", THROUGHPUT, IntervalPoint::rate),
        ("failed", ERRORS, |i| i.errors as f64 / i.len_s.max(1e-3)),
    ];
    for (label, color, value) in series {
        let points = intervals.iter().map(|i| (at(i), value(i)));
        line(&mut chart, points, label, color)?;
    }
    legend(&mut chart)?;
    root.present()?;
    Ok(())
}

const OBSERVED_HEIGHT: u32 = 260;
const BURST_BAND: RGBColor = RGBColor(0xee, 0xee, 0xee);

/// One observed series over time: the burst as a shaded band, the samples
/// as a line, each threshold's limit as a dashed line.
fn observed(
    buf: &mut String,
    points: &[crate::families::load::observe::Point],
    end_s: f64,
    limits: &[f64],
) -> DrawResult {
    let finite: Vec<(f64, f64)> = points
        .iter()
        .filter(|p| p.value.is_finite())
        .map(|p| (p.at_s, p.value))
        .collect();
    if finite.is_empty() {
        return Err("no sample was read".into());
    }
    let x0 = finite.iter().map(|p| p.0).fold(0.0, f64::min);
    let x1 = finite.iter().map(|p| p.0).fold(end_s.max(1.0), f64::max);
    let y_max = finite
        .iter()
        .map(|p| p.1)
        .chain(limits.iter().copied())
        .fold(0.0, f64::max);
    let root = SVGBackend::with_string(buf, (WIDTH, OBSERVED_HEIGHT)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut chart = frame(&root, "observed on the target", x0..x1, y_max)?;
    chart
        .configure_mesh()
        .max_light_lines(1)
        .x_desc("seconds since the burst began")
        .x_label_formatter(&|s| format!("{s:.0} s"))
        .draw()?;
    let top = nice_max(y_max);
    chart.draw_series(std::iter::once(Rectangle::new(
        [(0.0, 0.0), (end_s, top)],
        BURST_BAND.filled(),
    )))?;
    line(&mut chart, finite, "observed", THROUGHPUT)?;
    for &l in limits {
        chart
            .draw_series(DashedLineSeries::new(
                [(x0, l), (x1, l)],
                6,
                4,
                CORRECTED.stroke_width(1),
            ))?
            .label("limit")
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], CORRECTED));
    }
    legend(&mut chart)?;
    root.present()?;
    Ok(())
}

/// A chart on `area`: the report's margins, a caption, `x`, and a y axis
/// from 0 to a little above `y_max`.
fn frame<'a, 'b, X>(
    area: &'a DrawingArea<SVGBackend<'b>, Shift>,
    caption: &str,
    x: X,
    y_max: f64,
) -> Result<Chart<'a, 'b, X::CoordDescType>, Box<dyn Error>>
where
    X: AsRangedCoord<Value = f64>,
{
    Ok(ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 16))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(64)
        .build_cartesian_2d(x, 0f64..nice_max(y_max))?)
}

/// One series as a 2 px line, with its legend sample.
fn line<X: Ranged<ValueType = f64>>(
    chart: &mut Chart<'_, '_, X>,
    points: impl IntoIterator<Item = (f64, f64)>,
    label: &'static str,
    color: RGBColor,
) -> DrawResult {
    chart
        .draw_series(LineSeries::new(points, color.stroke_width(2)))?
        .label(label)
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color));
    Ok(())
}

fn legend<'a, DB: DrawingBackend + 'a, CT: CoordTranslate>(
    chart: &mut ChartContext<'a, DB, CT>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK.mix(0.4))
        .draw()?;
    Ok(())
}

/// Headroom above the highest value, and a non-empty axis when all are 0.
fn nice_max(v: f64) -> f64 {
    if v > 0.0 && v.is_finite() {
        v * 1.1
    } else {
        1.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_ticks_read_as_hdrhistogram_draws_them() {
        let labels: Vec<String> = (0..=5).map(|k| percentile_label(10f64.powi(k))).collect();
        assert_eq!(labels, ["0%", "90%", "99%", "99.9%", "99.99%", "99.999%"]);
        assert_eq!(percentile_x(0.0, 1e3), 1.0);
        assert!((percentile_x(0.99, 1e3) - 100.0).abs() < 1e-6);
        assert_eq!(percentile_x(1.0, 1e3), 1e3);
        assert_eq!(percentile_decades(10), 2);
        assert_eq!(percentile_decades(1000), 3);
        assert_eq!(percentile_decades(1001), 4);
        assert_eq!(percentile_decades(u64::MAX), 6);
    }

    #[test]
    fn the_svg_gets_a_title_and_scales() {
        let out = titled(
            "<svg width=\"720\" height=\"340\" viewBox=\"0 0 720 340\" xmlns=\"http://www.w3.org/2000/svg\">\n<rect/></svg>",
            "a &amp; b",
        );
        assert!(
            out.starts_with("<svg role=\"img\" style=\"max-width:100%;height:auto\" width=\"720\""),
            "{out}"
        );
        assert!(
            out.contains("><title>a &amp; b</title>\n<rect/></svg>"),
            "{out}"
        );
    }
}
