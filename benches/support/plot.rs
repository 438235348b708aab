//! SVG charts of bench results, written to `target/bench-plots/` with the `plotters`
//! crate (SVG backend only, no system fonts or libraries): bar panels (the work-queue
//! scenarios, memory per object), lines on log-log axes (time vs object count) and
//! latency CDFs. Shared by the benches through `#[path]`; a chart that cannot be
//! written is reported on stderr and never fails the bench.

use std::path::PathBuf;

use plotters::prelude::*;

/// Where the charts go: `$CARGO_TARGET_DIR/bench-plots` or `target/bench-plots`.
pub fn dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target"));
    target.join("bench-plots")
}

/// One panel of a bar chart: horizontal bars, one per implementation.
pub struct Panel {
    /// The panel's caption (scenario and unit).
    pub title: String,
    /// (implementation, value).
    pub bars: Vec<(String, f64)>,
}

type Res = Result<(), Box<dyn std::error::Error>>;

const COLORS: [RGBColor; 7] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(127, 127, 127),
];

fn color(i: usize) -> RGBColor {
    COLORS[i % COLORS.len()]
}

/// Writes `name` and reports where (or why not) on stderr.
fn write(name: &str, draw: impl FnOnce(&PathBuf) -> Res) {
    let path = dir().join(name);
    let done = std::fs::create_dir_all(dir())
        .map_err(Into::into)
        .and_then(|()| draw(&path));
    match done {
        Ok(()) => eprintln!("chart: {}", path.display()),
        Err(e) => eprintln!("chart {} not written: {e}", path.display()),
    }
}

fn panel(area: &DrawingArea<SVGBackend<'_>, plotters::coord::Shift>, p: &Panel) -> Res {
    let max = p.bars.iter().map(|b| b.1).fold(0.0, f64::max).max(1e-9) * 1.15;
    let n = p.bars.len().max(1) as f64;
    let mut chart = ChartBuilder::on(area)
        .caption(&p.title, ("sans-serif", 15))
        .margin(8)
        .x_label_area_size(25)
        .y_label_area_size(5)
        .build_cartesian_2d(0.0..max, 0.0..n)?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .disable_y_axis()
        .x_labels(5)
        .draw()?;
    for (i, (label, v)) in p.bars.iter().enumerate() {
        let y = n - i as f64 - 1.0;
        chart.draw_series(std::iter::once(Rectangle::new(
            [(0.0, y + 0.12), (*v, y + 0.88)],
            color(i).mix(0.55).filled(),
        )))?;
        chart.draw_series(std::iter::once(Text::new(
            format!("{label}: {v:.3}"),
            (max * 0.01, y + 0.62),
            ("sans-serif", 12),
        )))?;
    }
    Ok(())
}

/// Bar panels in a grid of `cols` columns, one file.
pub fn bars(name: &str, title: &str, cols: usize, panels: &[Panel]) {
    write(name, |path| {
        let cols = cols.max(1);
        let rows = panels.len().div_ceil(cols).max(1);
        let root =
            SVGBackend::new(path, (520 * cols as u32, 60 + 260 * rows as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let root = root.titled(title, ("sans-serif", 20))?;
        for (area, p) in root.split_evenly((rows, cols)).iter().zip(panels) {
            panel(area, p)?;
        }
        root.present()?;
        Ok(())
    });
}

/// One line of a line chart.
pub struct Series {
    /// The legend entry.
    pub label: String,
    /// (x, y) points, x ascending.
    pub points: Vec<(f64, f64)>,
}

fn bounds(series: &[Series], f: impl Fn(&(f64, f64)) -> f64) -> (f64, f64) {
    let vals = series.iter().flat_map(|s| s.points.iter().map(&f));
    let (lo, hi) = vals
        .filter(|v| *v > 0.0)
        .fold((f64::MAX, 0.0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    if hi <= 0.0 {
        (1.0, 10.0)
    } else {
        (lo * 0.8, hi * 1.25)
    }
}

/// Lines with a log x axis; `log_y` puts y on a log axis too (else linear from 0).
pub fn lines(name: &str, title: &str, axes: (&str, &str), log_y: bool, series: &[Series]) {
    write(name, |path| {
        let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
        root.fill(&WHITE)?;
        let (x0, x1) = bounds(series, |p| p.0);
        let (y0, y1) = bounds(series, |p| p.1);
        let mut b = ChartBuilder::on(&root);
        b.caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(70);
        if log_y {
            let mut chart = b.build_cartesian_2d((x0..x1).log_scale(), (y0..y1).log_scale())?;
            chart
                .configure_mesh()
                .x_desc(axes.0)
                .y_desc(axes.1)
                .draw()?;
            draw_lines(&mut chart, series)?;
        } else {
            let mut chart = b.build_cartesian_2d((x0..x1).log_scale(), 0.0..y1)?;
            chart
                .configure_mesh()
                .x_desc(axes.0)
                .y_desc(axes.1)
                .draw()?;
            draw_lines(&mut chart, series)?;
        }
        root.present()?;
        Ok(())
    });
}

fn draw_lines<'a, X, Y>(
    chart: &mut ChartContext<'a, SVGBackend<'a>, Cartesian2d<X, Y>>,
    series: &[Series],
) -> Res
where
    X: Ranged<ValueType = f64>,
    Y: Ranged<ValueType = f64>,
{
    for (i, s) in series.iter().enumerate() {
        let c = color(i);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), c.stroke_width(2)))?
            .label(&s.label)
            .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
        chart.draw_series(s.points.iter().map(|p| Circle::new(*p, 3, c.filled())))?;
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    Ok(())
}

/// The empirical CDF of each sample set (x: the value on a log axis, y: the
/// fraction at or below it), at most 400 points per line.
pub fn cdf(name: &str, title: &str, x_desc: &str, samples: &[(String, Vec<f64>)]) {
    let series: Vec<Series> = samples
        .iter()
        .map(|(label, v)| {
            let mut v: Vec<f64> = v.iter().map(|x| x.max(1e-3)).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            let step = (v.len() / 400).max(1);
            let n = v.len() as f64;
            let mut points: Vec<(f64, f64)> = v
                .iter()
                .enumerate()
                .filter(|(i, _)| i % step == 0 || *i == v.len() - 1)
                .map(|(i, x)| (*x, (i + 1) as f64 / n))
                .collect();
            points.dedup_by(|a, b| a.0 == b.0 && a.1 <= b.1);
            Series {
                label: label.clone(),
                points,
            }
        })
        .collect();
    write(name, |path| {
        let root = SVGBackend::new(path, (820, 520)).into_drawing_area();
        root.fill(&WHITE)?;
        let (x0, x1) = bounds(&series, |p| p.0);
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 20))
            .margin(12)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d((x0..x1).log_scale(), 0.0..1.0)?;
        chart
            .configure_mesh()
            .x_desc(x_desc)
            .y_desc("fraction of updates")
            .draw()?;
        draw_lines(&mut chart, &series)?;
        root.present()?;
        Ok(())
    });
}

/// One span of a trace timeline: a bar on its own row, `start`..`end` in ms.
#[allow(dead_code)] // drawn by the trace bench only; the others include this file too
pub struct SpanBar {
    /// The row's label (span name and what it is about).
    pub label: String,
    /// Start and end, ms from the trace's first span.
    pub start: f64,
    pub end: f64,
    /// Which trace it belongs to (its colour).
    pub trace: usize,
}

/// A trace timeline: one row per span, top to bottom, and each link `(from, to)` (row
/// indices: the span `to` links to the span `from`) drawn as a line from the end of
/// `from`'s bar to the start of `to`'s, ending in a dot.
#[allow(dead_code)] // the trace bench's only
pub fn timeline(name: &str, title: &str, spans: &[SpanBar], links: &[(usize, usize)]) {
    write(name, |path| {
        let n = spans.len().max(1) as f64;
        let max = spans.iter().map(|s| s.end).fold(0.0, f64::max).max(1e-3) * 1.05;
        let root = SVGBackend::new(path, (900, 60 + 34 * spans.len() as u32)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 18))
            .margin(10)
            .x_label_area_size(25)
            .build_cartesian_2d(0.0..max, 0.0..n)?;
        chart
            .configure_mesh()
            .disable_y_mesh()
            .disable_y_axis()
            .x_desc("ms")
            .x_labels(8)
            .draw()?;
        let row = |i: usize| n - i as f64 - 1.0;
        for (i, s) in spans.iter().enumerate() {
            let (y, end) = (row(i), s.end.max(s.start + max * 0.004));
            chart.draw_series(std::iter::once(Rectangle::new(
                [(s.start, y + 0.15), (end, y + 0.85)],
                color(s.trace).mix(0.6).filled(),
            )))?;
            chart.draw_series(std::iter::once(Text::new(
                s.label.clone(),
                (s.start + max * 0.005, y + 0.62),
                ("sans-serif", 12),
            )))?;
        }
        for &(from, to) in links {
            let (a, b) = (&spans[from], &spans[to]);
            let (p, q) = ((a.end, row(from) + 0.5), (b.start, row(to) + 0.5));
            chart.draw_series(std::iter::once(PathElement::new(vec![p, q], BLACK)))?;
            chart.draw_series(std::iter::once(Circle::new(q, 4, BLACK.filled())))?;
        }
        root.present()?;
        Ok(())
    });
}
