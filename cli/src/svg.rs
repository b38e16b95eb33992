//! `compare --svg`: the ratio of each method per size bucket, as a grouped bar chart in plain
//! SVG (no script, no external font or style sheet), written by hand.

use std::fmt::Write;

use pgdict::datum::Codec;
use pgdict_trainer::SizeBucket;

use crate::measure::{Comparison, Stats};
use crate::report::bucket_label;
use crate::text::counted;

const WIDTH: f64 = 860.0;
const HEIGHT: f64 = 440.0;
const LEFT: f64 = 64.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 56.0;
const BOTTOM: f64 = 100.0;

/// Fill colours: a light shade for a codec's plain method, a dark one with its dictionary.
fn colour(codec: Codec, dict: bool) -> &'static str {
    match (codec, dict) {
        (Codec::Pglz, false) => "#9ecae1",
        (Codec::Pglz, true) => "#2171b5",
        (Codec::Lz4, false) => "#fdae6b",
        (Codec::Lz4, true) => "#d94801",
        (Codec::Zstd, false) => "#a1d99b",
        (Codec::Zstd, true) => "#238b45",
    }
}

fn escape(text: &str) -> String {
    // Control characters (which XML 1.0 refuses, even as references) shown as escapes first.
    crate::text::printable(text.as_bytes())
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// A tick step that gives at most 8 ticks up to `max`: 0.25, 0.5, then 1, 2 or 5 times a
/// power of ten, however large `max` is (a ratio of thousands, for rows of one repeated byte).
fn tick_step(max: f64) -> f64 {
    if !max.is_finite() {
        return 1.0;
    }
    let decades = (0..).flat_map(|power| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(power)));
    // Always found: a finite max is at most 8 steps of some power of ten (past 1e308 the
    // step is infinite, and max / step is 0).
    [0.25, 0.5]
        .into_iter()
        .chain(decades)
        .find(|step| max / step <= 8.0)
        .unwrap_or(1.0)
}

/// The chart: one group of bars per non-empty size bucket, then one for all sizes.
pub fn chart(title: &str, comparison: &Comparison) -> String {
    // (label, datums, stats per method)
    let mut groups: Vec<(String, u64, Vec<&Stats>)> = Vec::new();
    for (b, bucket) in SizeBucket::ALL.into_iter().enumerate() {
        let datums = comparison.pglz().buckets[b].datums;
        if datums > 0 {
            groups.push((
                bucket_label(bucket).0.to_string(),
                datums,
                comparison.results.iter().map(|r| &r.buckets[b]).collect(),
            ));
        }
    }
    groups.push((
        "all sizes".into(),
        comparison.pglz().all.datums,
        comparison.results.iter().map(|r| &r.all).collect(),
    ));
    let max_ratio = groups
        .iter()
        .flat_map(|g| g.2.iter().filter_map(|s| s.ratio()))
        .fold(1.0f64, f64::max);
    let step = tick_step(max_ratio);
    let top_value = ((max_ratio / step).ceil() * step).max(step);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let y = |ratio: f64| TOP + plot_h * (1.0 - ratio / top_value);

    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        svg,
        r##"<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>"##
    );
    let _ = writeln!(
        svg,
        r#"<text x="{}" y="24" text-anchor="middle" font-size="15" font-weight="bold">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    let _ = writeln!(
        svg,
        r##"<text x="{}" y="42" text-anchor="middle" fill="#555555">ratio = raw bytes / stored bytes, whole datums, each compressed alone</text>"##,
        WIDTH / 2.0
    );
    // Grid and y axis.
    let mut tick = 0.0;
    while tick <= top_value + 1e-9 {
        let ty = y(tick);
        let _ = writeln!(
            svg,
            r##"<line x1="{LEFT}" y1="{ty:.1}" x2="{:.1}" y2="{ty:.1}" stroke="#e0e0e0"/>"##,
            WIDTH - RIGHT
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="end">{}</text>"#,
            LEFT - 6.0,
            ty + 4.0,
            trim_number(tick)
        );
        tick += step;
    }
    let _ = writeln!(
        svg,
        r#"<text transform="translate(16 {:.1}) rotate(-90)" text-anchor="middle">ratio</text>"#,
        TOP + plot_h / 2.0
    );
    // Bars.
    let group_w = plot_w / groups.len() as f64;
    let bars = comparison.results.len() as f64;
    let bar_w = group_w * 0.8 / bars;
    for (g, (label, datums, stats)) in groups.iter().enumerate() {
        let gx = LEFT + group_w * g as f64 + group_w * 0.1;
        for (m, (result, s)) in comparison.results.iter().zip(stats).enumerate() {
            let Some(ratio) = s.ratio() else { continue };
            let x = gx + bar_w * m as f64;
            let top = y(ratio);
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{top:.1}" width="{:.1}" height="{:.1}" fill="{}"><title>{} {}: {ratio:.2}</title></rect>"#,
                (bar_w - 1.0).max(1.0),
                (TOP + plot_h - top).max(0.0),
                colour(result.method.codec, result.method.dict),
                escape(result.method.label()),
                escape(label)
            );
            let _ = writeln!(
                svg,
                r#"<text x="{:.1}" y="{:.1}" text-anchor="middle" font-size="9">{ratio:.2}</text>"#,
                x + bar_w / 2.0,
                top - 3.0
            );
        }
        let cx = LEFT + group_w * (g as f64 + 0.5);
        let _ = writeln!(
            svg,
            r#"<text x="{cx:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            TOP + plot_h + 18.0,
            escape(label)
        );
        let _ = writeln!(
            svg,
            r##"<text x="{cx:.1}" y="{:.1}" text-anchor="middle" fill="#555555" font-size="10">{}</text>"##,
            TOP + plot_h + 32.0,
            counted(*datums, "datum")
        );
    }
    // The line of no gain, and the x axis.
    let one = y(1.0);
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{one:.1}" x2="{:.1}" y2="{one:.1}" stroke="#444444" stroke-dasharray="4 3"/>"##,
        WIDTH - RIGHT
    );
    let _ = writeln!(
        svg,
        r##"<line x1="{LEFT}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#000000"/>"##,
        TOP + plot_h,
        WIDTH - RIGHT,
        TOP + plot_h
    );
    // Legend.
    let legend_y = HEIGHT - 30.0;
    let entry_w = plot_w / comparison.results.len() as f64;
    for (m, result) in comparison.results.iter().enumerate() {
        let lx = LEFT + entry_w * m as f64;
        let label = if !result.method.dict && result.method.codec == Codec::Zstd {
            "zstd (reference)"
        } else {
            result.method.label()
        };
        let _ = writeln!(
            svg,
            r#"<rect x="{lx:.1}" y="{:.1}" width="12" height="12" fill="{}"/>"#,
            legend_y - 10.0,
            colour(result.method.codec, result.method.dict)
        );
        let _ = writeln!(
            svg,
            r#"<text x="{:.1}" y="{legend_y:.1}">{}</text>"#,
            lx + 17.0,
            escape(label)
        );
    }
    svg.push_str("</svg>\n");
    svg
}

fn trim_number(x: f64) -> String {
    let text = format!("{x:.2}");
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_stay_few_at_any_ratio() {
        for (max, step) in [
            (1.5, 0.25),
            (3.0, 0.5),
            (7.9, 1.0),
            (30.0, 5.0),
            (18_868.0, 5000.0),
        ] {
            assert_eq!(tick_step(max), step, "{max}");
        }
        for max in [0.0, 0.3, 9.0, 123.0, 1e9, 1e300] {
            assert!(max / tick_step(max) <= 8.0, "{max}");
        }
        assert_eq!(tick_step(f64::INFINITY), 1.0);
        assert_eq!(tick_step(f64::NAN), 1.0);
    }

    /// A file name is text in the chart: control characters, which XML 1.0 refuses even as
    /// character references, are shown as escapes, and markup is escaped.
    #[test]
    fn text_is_escaped_for_xml() {
        assert_eq!(
            escape("we<i&rd\"\u{1}\u{1b} \u{fffe}"),
            "we&lt;i&amp;rd&quot;\\u{1}\\u{1b} \\u{fffe}"
        );
    }

    /// An attribute's value in an element's line.
    fn attribute<'a>(line: &'a str, name: &str) -> &'a str {
        let start = line.find(&format!(" {name}=\"")).expect(name) + name.len() + 3;
        let len = line[start..].find('"').unwrap();
        &line[start..start + len]
    }

    /// An attribute's number in an element's line.
    fn number(line: &str, name: &str) -> f64 {
        attribute(line, name).parse().unwrap()
    }

    /// The text of the elements that start with `element` (up to the element's next `<`).
    fn texts<'a>(svg: &'a str, element: &str) -> Vec<&'a str> {
        svg.lines()
            .filter(|line| line.starts_with(element))
            .map(|line| {
                let text = &line[line.find('>').unwrap() + 1..];
                &text[..text.find('<').unwrap()]
            })
            .collect()
    }

    #[test]
    fn bars_stand_on_the_axis_as_tall_as_their_ratio_side_by_side() {
        let comparison = crate::report::tests::comparison(true);
        let svg = chart("a <chart>", &comparison);
        let axis = HEIGHT - BOTTOM;
        let bars: Vec<(&str, f64, f64, f64, f64)> = svg
            .lines()
            .filter(|line| line.starts_with("<rect x=") && line.contains("<title>"))
            .map(|line| {
                let title =
                    &line[line.find("<title>").unwrap() + 7..line.find("</title>").unwrap()];
                let [x, y, width, height] = ["x", "y", "width", "height"].map(|a| number(line, a));
                (title, x, y, width, height)
            })
            .collect();
        let titles: Vec<&str> = bars.iter().map(|bar| bar.0).collect();
        assert_eq!(
            titles,
            [
                "pglz &lt; 64 B: 1.00",
                "pglz+dict &lt; 64 B: 1.50",
                "zstd &lt; 64 B: 1.20",
                "pglz 256 B-1 KB: 2.33",
                "pglz+dict 256 B-1 KB: 2.50",
                "zstd 256 B-1 KB: 2.44",
                "pglz all sizes: 2.10",
                "pglz+dict all sizes: 2.37",
                "zstd all sizes: 2.25",
            ]
        );
        // The tallest (2.5) in a plot whose top tick is 2.5: the plot's full height.
        let pixels_a_ratio = (axis - TOP) / 2.5;
        let mut right_of_last = LEFT;
        for (title, x, y, width, height) in &bars {
            let ratio: f64 = title.rsplit(' ').next().unwrap().parse().unwrap();
            assert!(
                (y + height - axis).abs() < 0.11,
                "{title} stands on the axis"
            );
            assert!(
                (height - ratio * pixels_a_ratio).abs() < 0.8,
                "{title}: {height}"
            );
            assert!(
                *x >= right_of_last && *width > 1.0,
                "{title} beside the last"
            );
            right_of_last = x + width;
        }
        assert!(right_of_last <= WIDTH - RIGHT);
        // A group's bars (a pixel apart) fill 80 % of its share of the plot's width, its name
        // centred under them.
        let group_width = (WIDTH - LEFT - RIGHT) / 3.0;
        let names = ["&lt; 64 B", "256 B-1 KB", "all sizes"];
        for (group, name) in bars.chunks(3).zip(names) {
            let filled = group[2].1 + group[2].3 + 1.0 - group[0].1;
            assert!((filled - 0.8 * group_width).abs() < 0.3, "{filled}");
            let line = svg
                .lines()
                .find(|line| line.ends_with(&format!(">{name}</text>")));
            let centre = group[0].1 + (filled - 1.0) / 2.0;
            assert!((number(line.unwrap(), "x") - centre).abs() < 0.6, "{name}");
        }
        // The legend: a square a method, spread evenly from the plot's left under the names.
        let squares: Vec<(f64, f64)> = (svg.lines())
            .filter(|line| line.starts_with("<rect x=") && line.contains(r#"width="12""#))
            .map(|line| (number(line, "x"), number(line, "y")))
            .collect();
        let spacing = squares[1].0 - squares[0].0;
        assert!(squares[0].0 == LEFT && (squares[2].0 - squares[1].0 - spacing).abs() < 0.11);
        assert!((spacing - group_width).abs() < 0.11, "{spacing}");
        let below_the_names = axis + 32.0;
        let visible = |(_, y): &(f64, f64)| *y > below_the_names && y + 12.0 <= HEIGHT;
        assert!(squares.iter().all(visible), "{squares:?}");
        // Under each group, its name and its datums; ticks up to the top; the legend.
        let labels = texts(&svg, r#"<text x="#);
        let groups = [
            "&lt; 64 B",
            "3 datums",
            "256 B-1 KB",
            "1 datum",
            "all sizes",
            "4 datums",
        ];
        let at = |text: &str| labels.iter().position(|l| *l == text).expect(text);
        assert!(groups.windows(2).all(|pair| at(pair[0]) < at(pair[1])));
        assert!(
            !labels.contains(&"64-256 B"),
            "a size without rows has no group"
        );
        let ticks = ["0", "0.5", "1", "1.5", "2", "2.5"];
        assert_eq!(labels[2..2 + ticks.len()], ticks);
        assert_eq!(
            labels[1],
            "ratio = raw bytes / stored bytes, whole datums, each compressed alone"
        );
        assert_eq!(labels[0], "a &lt;chart&gt;");
        assert_eq!(
            labels[labels.len() - 3..],
            ["pglz", "pglz+dict", "zstd (reference)"]
        );
        // A colour a method, its bars' and its legend's, none another's.
        let fills: Vec<&str> = (svg.lines().filter(|line| line.starts_with("<rect x=")))
            .map(|line| attribute(line, "fill"))
            .collect();
        let legend = &fills[fills.len() - 3..];
        assert!(
            fills[..9].chunks(3).all(|group| group == legend),
            "{fills:?}"
        );
        assert!(legend
            .iter()
            .all(|fill| fill.len() == 7 && fill.starts_with('#')));
        assert!(legend[0] != legend[1] && legend[1] != legend[2] && legend[0] != legend[2]);
        // The line of no gain at a ratio of 1.
        let dashed = svg
            .lines()
            .find(|line| line.contains("stroke-dasharray"))
            .unwrap();
        assert!(
            (axis - number(dashed, "y1") - pixels_a_ratio).abs() < 0.11,
            "{dashed}"
        );
    }
}
