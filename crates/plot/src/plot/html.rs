//! The self-contained `report.html`: inline CSS, every chart as inline SVG, the charts' data as
//! JSON in a `<script type="application/json">` block; no script, font or style from elsewhere.

use serde_json::{Value, json};

use super::charts::Chart;
use super::inputs::Input;
use super::sweep::Sweep;

/// Text for HTML content and attribute values.
pub fn escape(s: &str) -> String {
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

/// A sweep in the data block: its variations (label, parameters, the plotted statistics), the
/// frontier computed and AIPerf's own, the SLA filters and the chosen variation (by label).
fn sweep_data(s: &Sweep) -> Value {
    let labels = |ix: &[usize]| -> Vec<String> {
        ix.iter().map(|&i| s.variations[i].label.clone()).collect()
    };
    let variations: Vec<Value> = s
        .variations
        .iter()
        .map(|v| {
            let mut stats = serde_json::Map::new();
            for (tag, stat) in SWEEP_METRICS {
                if let Some(x) = v.stat(tag, stat) {
                    stats.insert(format!("{tag}_{stat}"), json!(x.mean));
                }
            }
            json!({"label": v.label, "parameters": v.parameters, "feasible": v.feasible, "client_fell_behind": v.fell_behind, "stats": stats})
        })
        .collect();
    json!({
        "dir": s.dir.display().to_string(),
        "kind": s.kind,
        "variations": variations,
        "pareto": labels(&s.pareto()),
        "aiperf_pareto": labels(&s.aiperf_pareto),
        "slas": s.slas.iter().map(|x| json!({"metric_tag": x.tag, "stat": x.stat, "op": x.op, "threshold": x.threshold})).collect::<Vec<_>>(),
        "chosen": s.chosen.as_ref().map(|(i, why)| json!({"label": s.variations[*i].label, "why": why})),
        "notes": s.notes,
    })
}

/// The statistics of a sweep's table and data block.
const SWEEP_METRICS: [(&str, &str); 8] = [
    ("request_throughput", "avg"),
    ("output_token_throughput", "avg"),
    ("time_to_first_token", "avg"),
    ("time_to_first_token", "p50"),
    ("time_to_first_token", "p99"),
    ("request_latency", "avg"),
    ("request_latency", "p50"),
    ("request_latency", "p99"),
];

/// The data block: per input its runs' profiling records (as read from the JSONL), the
/// aggregate's metrics, per sweep its variations, and every chart's series.
pub fn data(inputs: &[Input], sweeps: &[Sweep], charts: &[Chart]) -> Value {
    let inputs: Vec<Value> = inputs
        .iter()
        .map(|i| {
            json!({
                "dir": i.dir.display().to_string(),
                "label": i.label,
                "runs": i.runs.iter().map(|r| json!({
                    "label": r.label,
                    "dir": r.dir.display().to_string(),
                    "requests": r.requests.iter().map(|q| json!({
                        "request_start_ns": q.start_ns,
                        "request_end_ns": q.end_ns,
                        "time_to_first_token": q.ttft_ms,
                        "inter_token_latency": q.itl_ms,
                        "request_latency": q.latency_ms,
                        "output_sequence_length": q.output_tokens,
                    })).collect::<Vec<_>>(),
                })).collect::<Vec<_>>(),
                "aggregate": i.aggregate.as_ref().map(|a| a["metrics"].clone()),
                "notes": i.notes,
            })
        })
        .collect();
    let sweeps: Vec<Value> = sweeps.iter().map(sweep_data).collect();
    // Each chart with its axes' ranges as drawn.
    let charts: Vec<Value> = charts
        .iter()
        .map(|c| {
            let mut v = json!(c);
            let ((x0, x1), (y0, y1)) = c.ranges();
            v["x_range"] = json!([x0, x1]);
            v["y_range"] = json!([y0, y1]);
            v
        })
        .collect();
    json!({"inputs": inputs, "sweeps": sweeps, "charts": charts})
}

/// `1,234.57` style for the tables.
fn num(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.3}")
    }
}

const TABLE_METRICS: [(&str, &str); 6] = [
    ("time_to_first_token", "avg"),
    ("time_to_first_token", "p99"),
    ("inter_token_latency", "avg"),
    ("request_latency", "avg"),
    ("request_latency", "p99"),
    ("output_token_throughput", "avg"),
];

fn inputs_section(inputs: &[Input]) -> String {
    let mut s = String::from(
        "<section><h2>Inputs</h2><table><tr><th>label</th><th>directory</th><th>runs</th><th>profiling records</th></tr>",
    );
    for i in inputs {
        let records: usize = i.runs.iter().map(|r| r.requests.len()).sum();
        s.push_str(&format!(
            "<tr><td>{}</td><td><code>{}</code></td><td>{}</td><td>{records}</td></tr>",
            escape(&i.label),
            escape(&i.dir.display().to_string()),
            i.runs.len()
        ));
    }
    s.push_str("</table>");
    for i in inputs {
        for n in &i.notes {
            s.push_str(&format!("<p class=\"note\">{}</p>", escape(n)));
        }
    }
    s.push_str("</section>");
    s
}

fn summary_section(inputs: &[Input]) -> String {
    let mut s = String::from("<section id=\"summary\"><h2>Summary</h2>");
    let any_ci = inputs.iter().any(|i| i.aggregate.is_some());
    if any_ci {
        s.push_str("<p>Multi-run directories: mean ± the confidence interval's half width (<code>aggregate/profile_export_aiperf_aggregate.json</code>).</p>");
    }
    s.push_str("<table id=\"summary-table\"><tr><th>input</th>");
    for (tag, stat) in TABLE_METRICS {
        s.push_str(&format!("<th>{tag} {stat}</th>"));
    }
    s.push_str("</tr>");
    for i in inputs {
        s.push_str(&format!("<tr><td>{}</td>", escape(&i.label)));
        for (tag, stat) in TABLE_METRICS {
            let cell = match i.stat(tag, stat) {
                Some(v) if i.aggregate.is_some() => format!(
                    "{} ± {} <small>[{}, {}]</small>",
                    num(v.mean),
                    num((v.ci_high - v.ci_low) / 2.0),
                    num(v.ci_low),
                    num(v.ci_high)
                ),
                Some(v) => num(v.mean),
                None => "–".into(),
            };
            s.push_str(&format!("<td>{cell}</td>"));
        }
        s.push_str("</tr>");
    }
    s.push_str("</table></section>");
    s
}

/// Per sweep: a table of its variations (statistics, frontier, SLAs, chosen) and its notes.
fn sweep_section(s: &Sweep) -> String {
    let mut h = format!(
        "<section class=\"sweep\"><h2>{} <code>{}</code></h2><p>{} variation(s). Pareto frontier: request_throughput avg maximised, {} p99 minimised (as AIPerf's sweep aggregate).",
        escape(&s.kind),
        escape(&s.dir.display().to_string()),
        s.variations.len(),
        s.latency_tag()
    );
    if let Some((i, why)) = &s.chosen {
        h.push_str(&format!(
            " Chosen ({}): <b>{}</b>.",
            escape(why),
            escape(&s.variations[*i].label)
        ));
    }
    h.push_str("</p><table class=\"sweep-table\"><tr><th>variation</th>");
    for (tag, stat) in SWEEP_METRICS {
        h.push_str(&format!("<th>{tag} {stat}</th>"));
    }
    h.push_str("<th>Pareto</th><th>AIPerf's pareto_optimal</th><th>client</th>");
    for sla in &s.slas {
        h.push_str(&format!("<th>{}</th>", escape(&sla.text())));
    }
    h.push_str("</tr>");
    let front = s.pareto();
    for (i, v) in s.variations.iter().enumerate() {
        h.push_str(&format!("<tr><td>{}</td>", escape(&v.label)));
        for (tag, stat) in SWEEP_METRICS {
            let cell = v
                .stat(tag, stat)
                .map_or_else(|| "–".into(), |x| num(x.mean));
            h.push_str(&format!("<td>{cell}</td>"));
        }
        let mark = |b: bool| if b { "✓" } else { "" };
        h.push_str(&format!(
            "<td>{}</td><td>{}</td><td>{}</td>",
            mark(front.contains(&i)),
            mark(s.aiperf_pareto.contains(&i)),
            if v.fell_behind {
                "fell behind (excluded)"
            } else {
                ""
            }
        ));
        for sla in &s.slas {
            let cell = match v.stat(&sla.tag, &sla.stat) {
                Some(x) if sla.holds(x.mean) => "within",
                Some(_) => "outside",
                None => "–",
            };
            h.push_str(&format!("<td>{cell}</td>"));
        }
        h.push_str("</tr>");
    }
    h.push_str("</table>");
    for n in &s.notes {
        h.push_str(&format!("<p class=\"note\">{}</p>", escape(n)));
    }
    h.push_str("</section>");
    h
}

/// One chart: its title, the inline SVG, and links to its files under `plots/`.
pub struct Figure<'a> {
    pub chart: &'a Chart,
    pub svg: &'a str,
}

/// The swim-lane section of a multi-turn run: the picture inline, links to its files.
pub fn swim_section(label: &str, id: &str, svg: &str, plots_rel: &str, note: &str) -> String {
    let id = escape(id);
    format!(
        "<section><h2>Sessions: {}</h2><p class=\"note\">{}</p><figure id=\"chart-{id}\" class=\"chart\">{svg}<p class=\"files\"><a href=\"{plots_rel}/{id}.png\">PNG</a> · <a href=\"{plots_rel}/{id}.svg\">SVG</a></p></figure></section>",
        escape(label),
        escape(note)
    )
}

fn figure(f: &Figure<'_>, plots_rel: &str) -> String {
    let id = escape(&f.chart.id);
    let sampled: String = f
        .chart
        .series
        .iter()
        .filter_map(|s| {
            s.sampled_from.map(|n| {
                format!(
                    " {}: {} of {n} points drawn.",
                    escape(&s.name),
                    s.points.len()
                )
            })
        })
        .collect();
    format!(
        "<figure id=\"chart-{id}\" class=\"chart\"><figcaption>{}</figcaption>{}<p class=\"files\">{sampled} <a href=\"{plots_rel}/{id}.png\">PNG</a> · <a href=\"{plots_rel}/{id}.svg\">SVG</a></p></figure>",
        escape(&f.chart.title),
        f.svg
    )
}

const STYLE: &str = "body{font-family:sans-serif;margin:1.5em;color:#222;max-width:1400px}\
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left}\
figure{margin:1em 0;display:inline-block;vertical-align:top}figcaption{font-weight:bold}\
svg{max-width:100%;height:auto;border:1px solid #eee}.note{color:#a40}.files{font-size:.85em}";

/// The whole page.
pub fn page(
    inputs: &[Input],
    sweeps: &[Sweep],
    sections: &[(String, Vec<Figure<'_>>, Option<String>)],
    data: &Value,
    plots_rel: &str,
    extra: &str,
) -> String {
    let mut body = String::new();
    body.push_str("<h1>ringperf report</h1>");
    if !inputs.is_empty() {
        body.push_str(&inputs_section(inputs));
        body.push_str(&summary_section(inputs));
    }
    for s in sweeps {
        body.push_str(&sweep_section(s));
    }
    for (title, figures, note) in sections {
        body.push_str(&format!("<section><h2>{}</h2>", escape(title)));
        if let Some(n) = note {
            body.push_str(&format!("<p class=\"note\">{}</p>", escape(n)));
        }
        for f in figures {
            body.push_str(&figure(f, plots_rel));
        }
        body.push_str("</section>");
    }
    body.push_str(extra);
    // `</` inside a JSON string would end the script element; `<\/` is the same JSON string.
    let json = serde_json::to_string(data)
        .unwrap_or_else(|_| "{}".into())
        .replace("</", "<\\/");
    format!(
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>ringperf report</title><style>{STYLE}</style></head><body>{body}<script type=\"application/json\" id=\"ringperf-data\">{json}</script></body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_and_the_script_end() {
        assert_eq!(
            escape("<a href=\"x\">&'"),
            "&lt;a href=&quot;x&quot;&gt;&amp;&#39;"
        );
        let html = page(&[], &[], &[], &json!({"s": "</script>"}), "plots", "");
        assert!(html.contains(r#"{"s":"<\/script>"}"#), "{html}");
        assert_eq!(html.matches("</script>").count(), 1);
    }
}
