//! Draws the contention curves of `benches/contention.rs` from criterion's
//! saved results: one SVG per family in `docs/curves/<family>.svg` (rows:
//! insert, contains, mixed; columns: L2, L3, far; in each panel Mops/s
//! against threads, one line per subject), and a markdown table of the same
//! figures, printed and written to `docs/curves/table.md`.
//!
//! ```sh
//! cargo bench -p atomic-bloom-benches --bench contention
//! cargo run --release -p atomic-bloom-benches --example plot_curves [CRITERION_DIR]   # default target/criterion
//! ```
//!
//! It reads every `benchmark.json` in a `new/` directory below the criterion
//! directory, criterion 0.7's layout being
//! `<family>_<workload>_<size>/<subject>/<threads>/new/` (the `/` of the
//! group id made `_`; the JSON keeps the id `family/workload/size`, the
//! subject, the thread count and the elements per iteration), and the
//! median time per iteration from the `estimates.json` beside it; Mops/s is
//! elements / median. Other benches' results there are ignored. Results that are absent are skipped and listed on
//! stderr. Figures from different runs are not comparable: run the whole
//! bench once, on a quiet machine, before drawing.
//!
//! Text in the SVGs is SVG `<text>` in the `sans-serif` family, laid out by
//! the browser: no font is embedded or needed here (plotters is built
//! without its `ttf` feature and estimates text widths itself).

use std::collections::{BTreeMap, BTreeSet};
use std::error::Error;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use plotters::prelude::*;

const FAMILIES: [&str; 5] = [
    "bloom-cacheline",
    "bloom-word",
    "counting",
    "scalable",
    "frontier",
];
const WORKLOADS: [&str; 3] = ["insert", "contains", "mixed"];
const SIZES: [&str; 3] = ["L2", "L3", "far"];
const OUT: &str = "docs/curves";

/// The subjects of `benches/contention.rs` in legend order, each with its
/// colour, the same in every picture: one colour per library.
const KNOWN: [(&str, RGBColor); 12] = [
    ("atomic-bloom", RGBColor(214, 39, 40)),      // red
    ("fastbloom", RGBColor(31, 119, 180)),        // blue
    ("bloomcraft", RGBColor(255, 127, 14)),       // orange
    ("bloomcraft-mutex", RGBColor(255, 127, 14)), //
    ("bloomcraft-scalable", RGBColor(255, 127, 14)),
    ("bloomfilter-rwlock", RGBColor(148, 103, 189)), // purple
    ("growable-mutex", RGBColor(148, 103, 189)),     //
    ("dashset", RGBColor(44, 160, 44)),              // green
    ("dashset-segqueue", RGBColor(44, 160, 44)),     //
    ("mutex-hashset", RGBColor(140, 86, 75)),        // brown
    ("mutex-hashset-deque", RGBColor(140, 86, 75)),  //
    ("floor", RGBColor(127, 127, 127)),              // grey
];

/// Colours for subjects not in `KNOWN`.
const OTHERS: [RGBColor; 4] = [
    RGBColor(227, 119, 194), // pink
    RGBColor(23, 190, 207),  // cyan
    RGBColor(188, 189, 34),  // olive
    RGBColor(31, 31, 120),   // navy
];

/// (family, workload, size) -> subject -> threads -> Mops/s.
type Results = BTreeMap<(String, String, String), BTreeMap<String, BTreeMap<u32, f64>>>;

/// (family, workload, size) -> (oldest, newest) result file.
type Written = BTreeMap<(String, String, String), (SystemTime, SystemTime)>;

/// One group takes a minute or two; results of one group written further
/// apart than this come from different runs.
const ONE_RUN: Duration = Duration::from_secs(10 * 60);

fn main() {
    let dir = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "target/criterion".into()),
    );
    if !dir.is_dir() {
        eprintln!(
            "no criterion results in {}: run `cargo bench -p atomic-bloom-benches --bench contention` first, \
             or pass the criterion directory",
            dir.display()
        );
        std::process::exit(1);
    }
    let mut results = Results::new();
    let mut written = Written::new();
    let mut unreadable = Vec::new();
    collect(&dir, &mut results, &mut written, &mut unreadable);
    for problem in &unreadable {
        eprintln!("skipped: {problem}");
    }
    for ((family, workload, size), (oldest, newest)) in &written {
        let apart = newest.duration_since(*oldest).unwrap_or_default();
        if apart > ONE_RUN {
            eprintln!(
                "warning: the results of {family}/{workload}/{size} were written {} minutes \
                 apart: they mix runs, compare with care",
                apart.as_secs() / 60
            );
        }
    }
    if results.is_empty() {
        eprintln!("no contention results under {}", dir.display());
        std::process::exit(1);
    }
    report_missing(&results);
    if let Err(e) = fs::create_dir_all(OUT) {
        eprintln!("cannot create {OUT}: {e}");
        std::process::exit(1);
    }
    let subjects = subject_order(&results);
    for family in families(&results) {
        let path = Path::new(OUT).join(format!("{family}.svg"));
        match draw_family(&path, &family, &results, &subjects) {
            Ok(()) => eprintln!("wrote {}", path.display()),
            Err(e) => eprintln!("could not draw {}: {e}", path.display()),
        }
    }
    let table = table(&results, &subjects);
    print!("{table}");
    let path = Path::new(OUT).join("table.md");
    match fs::write(&path, &table) {
        Ok(()) => eprintln!("wrote {}", path.display()),
        Err(e) => eprintln!("could not write {}: {e}", path.display()),
    }
}

/// Walks `dir` for `new/benchmark.json` files of contention groups.
fn collect(dir: &Path, results: &mut Results, written: &mut Written, unreadable: &mut Vec<String>) {
    let Ok(entries) = fs::read_dir(dir) else {
        unreadable.push(format!("{} (cannot list)", dir.display()));
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            // Criterion keeps the previous run in `base/`: read `new/` only.
            if path
                .file_name()
                .is_some_and(|n| n == "base" || n == "report")
            {
                continue;
            }
            collect(&path, results, written, unreadable);
        } else if path.file_name().is_some_and(|n| n == "benchmark.json")
            && path
                .parent()
                .and_then(Path::file_name)
                .is_some_and(|n| n == "new")
        {
            if let Err(e) = read_one(&path, results, written) {
                unreadable.push(format!("{} ({e})", path.display()));
            }
        }
    }
}

/// Reads one benchmark; `Ok` also when it is not a contention benchmark.
fn read_one(
    path: &Path,
    results: &mut Results,
    written: &mut Written,
) -> Result<(), Box<dyn Error>> {
    let bench: serde_json::Value = serde_json::from_str(&fs::read_to_string(path)?)?;
    let group = bench["group_id"].as_str().ok_or("no group_id")?;
    let parts: Vec<&str> = group.split('/').collect();
    let [family, workload, size] = parts[..] else {
        return Ok(()); // another bench's group
    };
    if !WORKLOADS.contains(&workload) || !SIZES.contains(&size) {
        return Ok(());
    }
    let subject = bench["function_id"].as_str().ok_or("no function_id")?;
    let threads: u32 = bench["value_str"]
        .as_str()
        .ok_or("no value_str")?
        .parse()
        .map_err(|_| "value_str is not a thread count")?;
    let elements = bench["throughput"]["Elements"]
        .as_f64()
        .ok_or("no Throughput::Elements")?;
    let estimates_path = path.with_file_name("estimates.json");
    let estimates: serde_json::Value = serde_json::from_str(
        &fs::read_to_string(&estimates_path)
            .map_err(|e| format!("{}: {e}", estimates_path.display()))?,
    )?;
    let median_ns = estimates["median"]["point_estimate"]
        .as_f64()
        .filter(|&ns| ns > 0.0)
        .ok_or("no median in estimates.json")?;
    let key = (family.to_string(), workload.to_string(), size.to_string());
    if let Ok(at) = fs::metadata(&estimates_path).and_then(|m| m.modified()) {
        let span = written.entry(key.clone()).or_insert((at, at));
        *span = (span.0.min(at), span.1.max(at));
    }
    results
        .entry(key)
        .or_default()
        .entry(subject.into())
        .or_default()
        .insert(threads, elements / median_ns * 1e3);
    Ok(())
}

/// The known families in their order, then any others found.
fn families(results: &Results) -> Vec<String> {
    let found: BTreeSet<&String> = results.keys().map(|(f, _, _)| f).collect();
    let mut out: Vec<String> = FAMILIES
        .iter()
        .filter(|f| found.iter().any(|g| g == *f))
        .map(|f| f.to_string())
        .collect();
    out.extend(
        found
            .into_iter()
            .filter(|f| !FAMILIES.contains(&f.as_str()))
            .cloned(),
    );
    out
}

/// Every subject found: the known ones in `KNOWN`'s order, then the others
/// by name.
fn subject_order(results: &Results) -> Vec<String> {
    let mut all: Vec<String> = results
        .values()
        .flat_map(|subjects| subjects.keys().cloned())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let rank = |s: &String| {
        KNOWN
            .iter()
            .position(|(k, _)| k == s)
            .unwrap_or(KNOWN.len())
    };
    all.sort_by_key(|s| rank(s)); // stable: unknown ones stay by name
    all
}

fn colour(subjects: &[String], subject: &str) -> RGBColor {
    if let Some((_, colour)) = KNOWN.iter().find(|(k, _)| *k == subject) {
        return *colour;
    }
    let unknown = subjects
        .iter()
        .filter(|s| !KNOWN.iter().any(|(k, _)| k == s))
        .position(|s| s == subject)
        .unwrap_or(0);
    OTHERS[unknown % OTHERS.len()]
}

/// Lists groups with no results and subjects short of a thread count.
fn report_missing(results: &Results) {
    for family in families(results) {
        for workload in WORKLOADS {
            for size in SIZES {
                let key = (family.clone(), workload.to_string(), size.to_string());
                let Some(subjects) = results.get(&key) else {
                    eprintln!("missing: {family}/{workload}/{size} (no results)");
                    continue;
                };
                let threads: BTreeSet<u32> =
                    subjects.values().flat_map(|t| t.keys().copied()).collect();
                for (subject, points) in subjects {
                    for t in threads.iter().filter(|t| !points.contains_key(t)) {
                        eprintln!("missing: {family}/{workload}/{size}/{subject}/{t}");
                    }
                }
            }
        }
    }
}

fn draw_family(
    path: &Path,
    family: &str,
    results: &Results,
    subjects: &[String],
) -> Result<(), Box<dyn Error>> {
    let root = SVGBackend::new(path, (1500, 1150)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root.titled(
        &format!("{family}: Mops/s against threads (log scale), 1% target"),
        ("sans-serif", 26),
    )?;
    let (grid, legend) = root.split_vertically(1150 - 40 - 70);
    let panels = grid.split_evenly((WORKLOADS.len(), SIZES.len()));
    let mut shown = BTreeSet::new();
    for (i, panel) in panels.iter().enumerate() {
        let (workload, size) = (WORKLOADS[i / SIZES.len()], SIZES[i % SIZES.len()]);
        let key = (family.to_string(), workload.to_string(), size.to_string());
        let caption = format!("{workload}, {size}");
        match results.get(&key) {
            Some(curves) => {
                draw_panel(panel, &caption, curves, subjects)?;
                shown.extend(curves.keys().cloned());
            }
            None => {
                panel.draw(&Text::new(
                    format!("{caption}: no results"),
                    (20, 30),
                    ("sans-serif", 18).into_font(),
                ))?;
            }
        }
    }
    // One legend for the whole picture, below the grid.
    let mut x = 60;
    for subject in subjects.iter().filter(|s| shown.contains(*s)) {
        let colour = colour(subjects, subject);
        legend.draw(&PathElement::new(
            vec![(x, 35), (x + 30, 35)],
            colour.stroke_width(3),
        ))?;
        legend.draw(&Circle::new((x + 15, 35), 4, colour.filled()))?;
        legend.draw(&Text::new(
            subject.clone(),
            (x + 38, 27),
            ("sans-serif", 17).into_font(),
        ))?;
        x += 60 + 10 * subject.len() as i32;
    }
    root.present()?;
    Ok(())
}

fn draw_panel(
    area: &DrawingArea<SVGBackend, plotters::coord::Shift>,
    caption: &str,
    curves: &BTreeMap<String, BTreeMap<u32, f64>>,
    subjects: &[String],
) -> Result<(), Box<dyn Error>> {
    // Threads at even spacing (1, 2, 4, 8 are doublings): x = 4 * index,
    // so the axis keeps a margin in integer coordinates.
    let threads: Vec<u32> = curves
        .values()
        .flat_map(|t| t.keys().copied())
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let at = |t: u32| 4 * threads.iter().position(|&x| x == t).unwrap_or(0) as i32;
    let values = curves.values().flat_map(|t| t.values().copied());
    let (lo, hi) = values.fold((f64::MAX, 0f64), |(lo, hi), v| (lo.min(v), hi.max(v)));
    let x_max = 4 * (threads.len().max(2) as i32 - 1);
    let x_ticks = (0..threads.len() as i32).map(|i| 4 * i).collect();
    let (y_lo, y_hi) = (lo * 0.7, hi * 1.4);
    // 1-2-3-5 ticks, or every step where that leaves fewer than three:
    // plotters' own log ticks are decades or all nine steps.
    let ticks = |steps: &[f64]| -> Vec<f64> {
        (-3..6)
            .flat_map(|e| steps.iter().map(move |m| m * 10f64.powi(e)))
            .filter(|&y| (y_lo..=y_hi).contains(&y))
            .collect()
    };
    let mut y_ticks = ticks(&[1.0, 2.0, 3.0, 5.0]);
    if y_ticks.len() < 3 {
        y_ticks = ticks(&[1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]);
    }
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(12)
        .x_label_area_size(40)
        .y_label_area_size(60)
        .build_cartesian_2d(
            (-1..x_max + 1).with_key_points(x_ticks),
            (y_lo..y_hi).log_scale().with_key_points(y_ticks),
        )?;
    let x_label = |x: &i32| match threads.get((x / 4) as usize) {
        Some(t) if x % 4 == 0 && *x >= 0 => t.to_string(),
        _ => String::new(),
    };
    let y_label = |y: &f64| {
        if *y >= 10.0 {
            format!("{y:.0}")
        } else {
            format!("{y}")
        }
    };
    chart
        .configure_mesh()
        .x_desc("threads")
        .y_desc("Mops/s")
        .x_label_formatter(&x_label)
        .y_label_formatter(&y_label)
        .bold_line_style(RGBColor(225, 225, 225))
        .light_line_style(WHITE)
        .draw()?;
    for subject in subjects {
        let Some(points) = curves.get(subject) else {
            continue;
        };
        let colour = colour(subjects, subject);
        let line: Vec<(i32, f64)> = points.iter().map(|(&t, &v)| (at(t), v)).collect();
        let width = if subject == "atomic-bloom" { 3 } else { 2 };
        chart.draw_series(LineSeries::new(line.clone(), colour.stroke_width(width)))?;
        chart.draw_series(line.iter().map(|&p| Circle::new(p, 4, colour.filled())))?;
    }
    Ok(())
}

/// The markdown table: one row per (family, workload, size, subject).
fn table(results: &Results, subjects: &[String]) -> String {
    let threads: Vec<u32> = results
        .values()
        .flat_map(|s| s.values().flat_map(|t| t.keys().copied()))
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut out = String::new();
    let heads: Vec<String> = threads.iter().map(|t| format!("{t} thr")).collect();
    let _ = writeln!(
        out,
        "Mops/s (median), `cargo bench -p atomic-bloom-benches --bench contention`, 1% target, u64 keys.\n\n\
         | family | workload | size | subject | {} |",
        heads.join(" | ")
    );
    let _ = writeln!(out, "|---|---|---|---|{}", "---:|".repeat(threads.len()));
    for family in families(results) {
        for workload in WORKLOADS {
            for size in SIZES {
                let key = (family.clone(), workload.to_string(), size.to_string());
                let Some(curves) = results.get(&key) else {
                    continue;
                };
                for subject in subjects.iter().filter(|s| curves.contains_key(*s)) {
                    let cells: Vec<String> = threads
                        .iter()
                        .map(|t| curves[subject].get(t).map_or("".into(), |&v| mops(v)))
                        .collect();
                    let name = if subject == "atomic-bloom" {
                        format!("**{subject}**")
                    } else {
                        subject.clone()
                    };
                    let _ = writeln!(
                        out,
                        "| {family} | {workload} | {size} | {name} | {} |",
                        cells.join(" | ")
                    );
                }
            }
        }
    }
    out
}

/// Three significant figures, at least one decimal under 100.
fn mops(v: f64) -> String {
    if v >= 100.0 {
        format!("{v:.0}")
    } else if v >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    }
}
