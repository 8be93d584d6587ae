//! The self-contained `report.html`: inline CSS, every chart as inline SVG, the charts' data as
//! JSON in a `<script type="application/json">` block; no script, font or style from elsewhere.

use serde_json::{Value, json};

use super::charts::Chart;
use super::inputs::Input;

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

/// The data block: per input its runs' profiling records (as read from the JSONL), the
/// aggregate's metrics, and every chart's series.
pub fn data(inputs: &[Input], charts: &[Chart]) -> Value {
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
    json!({"inputs": inputs, "charts": charts})
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

/// One chart: its title, the inline SVG, and links to its files under `plots/`.
pub struct Figure<'a> {
    pub chart: &'a Chart,
    pub svg: &'a str,
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
    sections: &[(&str, Vec<Figure<'_>>, Option<String>)],
    data: &Value,
    plots_rel: &str,
) -> String {
    let mut body = String::new();
    body.push_str("<h1>ringperf report</h1>");
    body.push_str(&inputs_section(inputs));
    body.push_str(&summary_section(inputs));
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
        let html = page(&[], &[], &json!({"s": "</script>"}), "plots");
        assert!(html.contains(r#"{"s":"<\/script>"}"#), "{html}");
        assert_eq!(html.matches("</script>").count(), 1);
    }
}
