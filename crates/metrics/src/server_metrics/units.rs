//! Unit inference from a metric's HELP text and name (docs/output-formats.md): the text beats the
//! name suffix. Returned strings are AIPerf's exported display names.

/// Infers the display unit of a metric, or `None` when nothing matches.
#[must_use]
pub fn infer_unit(name: &str, description: &str) -> Option<&'static str> {
    scale_from_description(description)
        .or_else(|| tag_from_description(description))
        .or_else(|| phrase_from_description(description))
        .or_else(|| from_suffix(name))
}

/// Lower-cased description with en/em dashes folded and spaces around dashes removed.
fn normalize(description: &str) -> String {
    let folded: String = description
        .chars()
        .map(|c| if c == '–' || c == '—' { '-' } else { c })
        .collect::<String>()
        .to_lowercase();
    let mut out = String::with_capacity(folded.len());
    let mut chars = folded.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ' ' && (chars.peek() == Some(&'-') || out.ends_with('-')) {
            continue;
        }
        out.push(c);
        if c == '-' {
            while chars.peek() == Some(&' ') {
                chars.next();
            }
        }
    }
    out
}

/// True when `needle` occurs in `hay` not glued to digits / dots on either side.
fn contains_bounded(hay: &str, needle: &str) -> bool {
    let glued = |c: Option<char>| c.is_some_and(|c| c.is_ascii_digit() || c == '.');
    hay.match_indices(needle).any(|(i, _)| {
        let before = hay.get(..i).and_then(|s| s.chars().next_back());
        let after = hay.get(i + needle.len()..).and_then(|s| s.chars().next());
        !glued(before) && !glued(after)
    })
}

fn scale_from_description(description: &str) -> Option<&'static str> {
    let d = normalize(description);
    let ratio = ["(0-1)", "(0.0-1.0)", "(0 to 1)"]
        .iter()
        .any(|p| d.contains(p))
        || contains_bounded(&d, "0-1")
        || ["means", "is", "equals", "="].iter().any(|verb| {
            ["100%", "100 %", "100 percent"]
                .iter()
                .any(|tail| contains_bounded(&d, &format!("1 {verb} {tail}")))
        });
    if ratio {
        return Some("ratio");
    }
    let percent = ["(0-100)", "range 0-100", "0-100%", "0 to 100%"]
        .iter()
        .any(|p| contains_bounded(&d, p) || d.contains(p));
    percent.then_some("percent")
}

fn tag_from_description(description: &str) -> Option<&'static str> {
    let start = description.find("(in ")? + 4;
    let rest = description.get(start..)?;
    let tag = rest.get(..rest.find(')')?)?.trim();
    Some(match tag {
        "MiB" | "MB" => "megabytes",
        "GiB" | "GB" => "gigabytes",
        "KiB" | "KB" => "kilobytes",
        "TB" => "terabytes",
        "B" => "bytes",
        "C" | "°C" => "celsius",
        "F" | "°F" => "fahrenheit",
        "K" => "kelvin",
        "Hz" => "hertz",
        "MHz" => "megahertz",
        "GHz" => "gigahertz",
        "W" => "watt",
        "mW" => "milliwatt",
        "J" => "joule",
        "mJ" => "millijoule",
        "MJ" => "megajoule",
        "s" | "sec" => "seconds",
        "ms" => "milliseconds",
        "ns" => "nanoseconds",
        "us" | "µs" => "microseconds",
        "GB/s" => "gb/s",
        "MB/s" => "mb/s",
        "%" | "percent" => "percent",
        _ => return None,
    })
}

fn phrase_from_description(description: &str) -> Option<&'static str> {
    let d = description.to_lowercase();
    let word = |w: &str| {
        d.match_indices(w).any(|(i, _)| {
            let after = d.get(i + w.len()..).and_then(|s| s.chars().next());
            !after.is_some_and(|c| c.is_ascii_alphanumeric())
        })
    };
    let table: [(&[&str], &'static str); 9] = [
        (&["in seconds", "(seconds)"], "seconds"),
        (
            &["in milliseconds", "(milliseconds)", "in ms", "(ms)"],
            "milliseconds",
        ),
        (
            &["in nanoseconds", "(nanoseconds)", "in ns", "(ns)"],
            "nanoseconds",
        ),
        (&["in bytes", "(bytes)"], "bytes"),
        (&["gb/s"], "gb/s"),
        (&["mb/s"], "mb/s"),
        (&["tokens/s", "tokens per second"], "tokens/s"),
        (&["requests/s", "requests per second"], "requests/s"),
        (&["in tokens"], "tokens"),
    ];
    table
        .iter()
        .find(|(pats, _)| pats.iter().any(|p| word(p)))
        .map(|(_, unit)| *unit)
}

fn from_suffix(name: &str) -> Option<&'static str> {
    const SUFFIXES: &[(&str, &str)] = &[
        ("_seconds", "seconds"),
        ("_seconds_total", "seconds"),
        ("_milliseconds", "milliseconds"),
        ("_ms", "milliseconds"),
        ("_ms_total", "milliseconds"),
        ("_nanoseconds", "nanoseconds"),
        ("_ns", "nanoseconds"),
        ("_ns_total", "nanoseconds"),
        ("_bytes", "bytes"),
        ("_bytes_total", "bytes"),
        ("_kilobytes", "kilobytes"),
        ("_megabytes", "megabytes"),
        ("_gigabytes", "gigabytes"),
        ("_total", "count"),
        ("_count", "count"),
        ("_tokens", "tokens"),
        ("_tokens_total", "tokens"),
        ("_requests", "requests"),
        ("_requests_total", "requests"),
        ("request_success", "requests"),
        ("_reqs", "requests"),
        ("_errors", "errors"),
        ("_errors_total", "errors"),
        ("_error_count", "errors"),
        ("_error_count_total", "errors"),
        ("_blocks", "blocks"),
        ("_blocks_total", "blocks"),
        ("_block_count", "blocks"),
        ("_gb_s", "gb/s"),
        ("_ratio", "ratio"),
        ("_percent", "percent"),
        ("_perc", "percent"),
        ("_celsius", "celsius"),
        ("_joules", "joule"),
        ("_watts", "watt"),
    ];
    let lower = name.to_lowercase();
    let best = SUFFIXES
        .iter()
        .filter(|(s, _)| lower.ends_with(s))
        .max_by_key(|(s, _)| s.len())
        .map(|(_, u)| *u);
    best.or_else(|| lower.contains("num_requests_").then_some("requests"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn description_beats_suffix() {
        let help = "KV-cache usage. 1 means 100 percent usage.";
        assert_eq!(infer_unit("vllm:kv_cache_usage_perc", help), Some("ratio"));
        assert_eq!(infer_unit("vllm:kv_cache_usage_perc", ""), Some("percent"));
        assert_eq!(
            infer_unit("gpu_util", "Utilization (0-100)"),
            Some("percent")
        );
        assert_eq!(
            infer_unit("gpu_util", "Utilization, range 0–1"),
            Some("ratio")
        );
        assert_eq!(infer_unit("x", "share (0.0 - 1.0)"), Some("ratio"));
        assert_eq!(infer_unit("x", "between 0-100% busy"), Some("percent"));
        assert_eq!(infer_unit("mem", "Used memory (in MiB)"), Some("megabytes"));
        assert_eq!(infer_unit("x_total", "Energy (in mJ)"), Some("millijoule"));
        assert_eq!(
            infer_unit("lat", "Latency in milliseconds."),
            Some("milliseconds")
        );
        assert_eq!(infer_unit("tp", "Throughput in tokens/s"), Some("tokens/s"));
    }

    #[test]
    fn suffixes_longest_first() {
        assert_eq!(
            infer_unit("vllm:prompt_tokens", "Number of prefill tokens processed."),
            Some("tokens")
        );
        assert_eq!(infer_unit("foo_tokens_total", ""), Some("tokens"));
        assert_eq!(infer_unit("foo_total", ""), Some("count"));
        assert_eq!(
            infer_unit("vllm:e2e_request_latency_seconds", ""),
            Some("seconds")
        );
        assert_eq!(infer_unit("vllm:request_success", ""), Some("requests"));
        assert_eq!(infer_unit("x_error_count_total", ""), Some("errors"));
        assert_eq!(
            infer_unit("vllm:num_requests_running", ""),
            Some("requests")
        );
        assert_eq!(
            infer_unit("process_open_fds", "Number of open file descriptors."),
            None
        );
    }
}
