//! The side-by-side table the benches print: one row per implementation with its
//! median / min / max and its spread (max / min: how far apart the repetitions were, the noise a
//! ratio between rows has to clear), and ratio columns against other rows of the same table (the
//! work-queue table's "vs bare" / "vs kube", the e2e table's "vs kube-runtime" /
//! "vs floor"). Shared by `benches/workqueue.rs` and `benches/e2e.rs` through `#[path]`.

/// One implementation's result in one scenario.
pub struct Row {
    /// The implementation's name, also what ratio columns refer to.
    pub label: String,
    /// The median over the repetitions.
    pub med: f64,
    /// The smallest repetition.
    pub min: f64,
    /// The largest repetition.
    pub max: f64,
    /// Free text printed after the ratios.
    pub extra: String,
}

impl Row {
    /// A row from repetition values (sorted here).
    pub fn from_values(label: impl Into<String>, mut v: Vec<f64>, extra: String) -> Row {
        v.sort_by(|a, b| a.total_cmp(b));
        Row {
            label: label.into(),
            med: v.get(v.len() / 2).copied().unwrap_or(0.0),
            min: v.first().copied().unwrap_or(0.0),
            max: v.last().copied().unwrap_or(0.0),
            extra,
        }
    }
}

/// A ratio column: for a row's label, the label of the row it is compared with
/// (`None`: the cell stays empty).
pub struct Column<'a> {
    /// The column header.
    pub header: &'a str,
    /// The base row of each row.
    pub base: &'a dyn Fn(&str) -> Option<String>,
}

/// The ratio of `med` against `base`, oriented so that > 1 means `med` is better.
pub fn ratio(med: f64, base: f64, higher_is_better: bool) -> Option<f64> {
    (base > 0.0 && med > 0.0).then(|| {
        if higher_is_better {
            med / base
        } else {
            base / med
        }
    })
}

/// Prints `rows` under `title`, with one ratio per column ("-" when its base row is
/// missing or zero). `higher_is_better` orients the ratios: > 1 always means the row
/// is better than its base.
pub fn print(
    title: &str,
    unit: &str,
    higher_is_better: bool,
    rows: &[Row],
    columns: &[Column<'_>],
) {
    let width = rows
        .iter()
        .map(|r| r.label.len())
        .max()
        .unwrap_or(0)
        .max(32);
    let find = |l: &str| rows.iter().find(|r| r.label == l).map(|r| r.med);
    println!("\n{title}");
    let mut head = format!(
        "  {:<width$} {:>10} {:>10} {:>10} {:>8} ",
        "implementation", "median", "min", "max", "max/min"
    );
    for c in columns {
        head.push_str(&format!(" {:>w$}", c.header, w = c.header.len().max(8)));
    }
    println!("{head}  {unit}");
    for r in rows {
        let spread = if r.min > 0.0 { r.max / r.min } else { f64::NAN };
        let mut line = format!(
            "  {:<width$} {:>10.3} {:>10.3} {:>10.3} {:>8.2} ",
            r.label, r.med, r.min, r.max, spread
        );
        for c in columns {
            let cell = match (c.base)(&r.label) {
                None => String::new(),
                Some(b) => find(&b)
                    .and_then(|b| ratio(r.med, b, higher_is_better))
                    .map_or_else(|| "-".into(), |x| format!("{x:.2}x")),
            };
            line.push_str(&format!(" {:>w$}", cell, w = c.header.len().max(8)));
        }
        println!("{line}  {}", r.extra);
    }
}
