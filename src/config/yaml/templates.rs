//! The templates of `ringperf config init`: AIPerf 0.13's 27 names, each with its category,
//! title, description, tags, difficulty and features, and a file (assets/config-templates/)
//! holding the same settings as AIPerf's template of that name, explained in ringperf's words;
//! and ringperf's `concurrency-sweep`, the one concurrency sweep ringperf runs as it stands.

/// One template.
#[derive(Debug, Clone, Copy)]
pub struct Template {
    /// The name `--template` takes (the file's stem).
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// One of [`CATEGORIES`].
    pub category: &'static str,
    pub tags: &'static [&'static str],
    /// `beginner`, `intermediate` or `advanced`.
    pub difficulty: &'static str,
    pub features: &'static [&'static str],
    /// The YAML, with its default model and URL.
    pub text: &'static str,
}

/// The categories, in the order `--list` prints them (AIPerf's).
pub const CATEGORIES: [&str; 7] = [
    "Getting Started",
    "Load Testing",
    "Datasets",
    "Sweep & Multi-Run",
    "Advanced",
    "Multimodal",
    "Specialized Endpoints",
];

macro_rules! template {
    ($name:literal, $title:literal, $desc:literal, $cat:literal, [$($tag:literal),*],
     $diff:literal, [$($feat:literal),*]) => {
        Template {
            name: $name,
            title: $title,
            description: $desc,
            category: $cat,
            tags: &[$($tag),*],
            difficulty: $diff,
            features: &[$($feat),*],
            text: include_str!(concat!("../../../assets/config-templates/", $name, ".yaml")),
        }
    };
}

/// Every template, by name.
pub const TEMPLATES: &[Template] = &[
    template!(
        "audio_multimodal",
        "Audio/Speech Model Benchmark",
        "Benchmark speech-to-text or audio understanding models.",
        "Multimodal",
        ["audio", "speech", "multimodal"],
        "intermediate",
        ["audio config", "duration distributions"]
    ),
    template!(
        "concurrency-sweep",
        "Concurrency Sweep (ringperf)",
        "One run per concurrency from 1 to 64, the same workload each time; runs on ringperf as written.",
        "Sweep & Multi-Run",
        ["sweep", "grid", "concurrency", "ringperf"],
        "beginner",
        ["grid sweep", "variables"]
    ),
    template!(
        "embeddings",
        "Embeddings Endpoint Benchmark",
        "Benchmark embedding models with batched text requests.",
        "Specialized Endpoints",
        ["embeddings", "search", "retrieval"],
        "beginner",
        ["embeddings endpoint", "batch processing"]
    ),
    template!(
        "env_var_production",
        "Environment Variable Production Config",
        "CI/CD-friendly template where all deployment-specific values come from env vars.",
        "Advanced",
        ["env-vars", "ci-cd", "production"],
        "intermediate",
        ["env var substitution", "defaults", "CI/CD ready"]
    ),
    template!(
        "fixed_schedule",
        "Fixed Schedule (Hand-Authored Timestamps)",
        "Send requests at exact millisecond timestamps from a JSONL file for deterministic temporal testing.",
        "Load Testing",
        [
            "fixed_schedule",
            "mooncake",
            "regression",
            "deterministic",
            "timing"
        ],
        "advanced",
        [
            "fixed_schedule",
            "mooncake_trace",
            "autoOffset",
            "startOffset/endOffset windowing"
        ]
    ),
    template!(
        "goodput_slo",
        "Goodput / SLO Benchmark",
        "Measure good requests/sec that meet latency SLO thresholds at multiple load levels.",
        "Load Testing",
        ["goodput", "slo", "latency", "multi-phase"],
        "intermediate",
        ["SLOs", "multi-phase", "poisson arrival", "slice_duration"]
    ),
    template!(
        "gpu_telemetry",
        "GPU Telemetry (DCGM / pynvml)",
        "Collect GPU power, utilization, memory, and temperature during a benchmark via DCGM or pynvml.",
        "Advanced",
        ["gpu", "telemetry", "dcgm", "pynvml", "power", "utilization"],
        "intermediate",
        ["gpu telemetry", "dcgm", "pynvml", "realtime dashboard"]
    ),
    template!(
        "http_trace_metrics",
        "HTTP Trace Metrics (Latency Breakdown)",
        "Capture per-phase HTTP timing (DNS, connect, sending, waiting/TTFB, receiving) for transport-layer debugging.",
        "Advanced",
        ["http", "trace", "debugging", "ttfb", "k6", "har", "network"],
        "advanced",
        ["showTraceTiming", "trace export", "k6/HAR-aligned metrics"]
    ),
    template!(
        "inline_dataset",
        "Inline Dataset",
        "Embed dataset records directly in the YAML config (no separate JSONL file required).",
        "Datasets",
        ["inline", "dataset", "yaml-config"],
        "beginner",
        ["inline-records", "single-turn", "multi-turn", "random-pool"]
    ),
    template!(
        "jinja2_variables",
        "Jinja2 Computed Config",
        "Define variables once and compute derived values with Jinja2 expressions.",
        "Advanced",
        ["jinja2", "variables", "templating"],
        "intermediate",
        ["Jinja2 templates", "variables section", "computed values"]
    ),
    template!(
        "kv_cache_test",
        "KV Cache / Prefix Caching",
        "Test KV cache efficiency with shared system prompts using user-centric mode.",
        "Advanced",
        ["kv-cache", "prefix", "user-centric"],
        "advanced",
        ["user_centric mode", "shared prefix", "per-user rate"]
    ),
    template!(
        "latency_test",
        "Latency Test (Controlled QPS)",
        "Measure TTFT, ITL, and E2E latency at a controlled request rate.",
        "Load Testing",
        ["latency", "poisson", "ttft", "itl"],
        "beginner",
        ["poisson arrival", "streaming", "latency metrics"]
    ),
    template!(
        "long_context",
        "Long Context Benchmark (32K+)",
        "Test performance with long input contexts and prefill concurrency limits.",
        "Advanced",
        ["long-context", "prefill", "memory"],
        "intermediate",
        ["prefill_concurrency", "long ISL", "concurrency ramp"]
    ),
    template!(
        "minimal",
        "Minimal Configuration",
        "Bare minimum config using shorthand forms -- the fastest way to get started.",
        "Getting Started",
        ["quick-start", "simple"],
        "beginner",
        ["shorthand syntax"]
    ),
    template!(
        "multi_turn_conversation",
        "Multi-Turn Conversation",
        "Simulate realistic chatbot workloads with multi-turn context accumulation.",
        "Datasets",
        ["multi-turn", "conversation", "chatbot"],
        "intermediate",
        ["multi-turn", "turn delay", "session tracking"]
    ),
    template!(
        "multi_url_load_balancing",
        "Multi-URL Load Balancing",
        "Distribute requests across multiple server replicas for load balancer testing.",
        "Load Testing",
        ["load-balancing", "multi-url", "scaling"],
        "intermediate",
        ["multiple URLs", "round-robin"]
    ),
    template!(
        "multimodal_vision",
        "Vision-Language Model Benchmark",
        "Benchmark VLMs with synthetic images of varying resolutions.",
        "Multimodal",
        ["vision", "multimodal", "images"],
        "intermediate",
        ["image config", "resolution distributions"]
    ),
    template!(
        "public_dataset",
        "Public Dataset (ShareGPT)",
        "Use real multi-turn conversations from the ShareGPT public dataset.",
        "Datasets",
        ["sharegpt", "public", "real-data"],
        "beginner",
        ["public dataset", "auto-download"]
    ),
    template!(
        "ramping",
        "Gradual Load Ramping",
        "Smoothly ramp concurrency and request rate to avoid cold-start transients and connection storms.",
        "Load Testing",
        ["ramp", "concurrency", "rate", "capacity", "stress"],
        "intermediate",
        ["concurrencyRamp", "rateRamp", "prefillRamp", "two-phase"]
    ),
    template!(
        "request_cancellation",
        "Request Cancellation Test",
        "Test server behavior when clients cancel in-flight requests.",
        "Load Testing",
        ["cancellation", "resilience"],
        "advanced",
        ["cancellation", "rate + delay"]
    ),
    template!(
        "scenario_workload_profiles",
        "Scenario Sweep: Workload Profiles",
        "Hand-curated named scenarios testing distinct workload shapes.",
        "Sweep & Multi-Run",
        ["sweep", "scenario", "workload"],
        "intermediate",
        ["scenario sweep", "deep merge", "named runs"]
    ),
    template!(
        "speed_bench_sweep",
        "SPEED-Bench Per-Category Sweep",
        "Sweep all 11 qualitative SPEED-Bench categories to populate the speed-bench-report matrix.",
        "Sweep & Multi-Run",
        [
            "sweep",
            "grid",
            "speed-bench",
            "speculative-decoding",
            "server-metrics"
        ],
        "intermediate",
        ["grid sweep", "public dataset", "server metrics"]
    ),
    template!(
        "sweep_distributions",
        "Grid Sweep + Multi-Run",
        "Cartesian product sweep over ISL x rate with statistical multi-run aggregation.",
        "Sweep & Multi-Run",
        ["sweep", "grid", "multi-run", "statistics"],
        "intermediate",
        ["grid sweep", "multi-run", "confidence intervals"]
    ),
    template!(
        "sweep_with_plot",
        "Concurrency Sweep with Inline Plot Envelope",
        "Sweep concurrency to draw a Pareto frontier, with the visualization config inlined in the same YAML.",
        "Sweep & Multi-Run",
        ["sweep", "grid", "plot", "pareto", "multi-run", "auto-plot"],
        "intermediate",
        [
            "grid sweep",
            "multi-run",
            "inline plot envelope",
            "auto-plot"
        ]
    ),
    template!(
        "time_based_soak",
        "Time-Based Soak Test",
        "Run a fixed-duration benchmark (e.g., 1h) to validate stability and detect leaks under sustained load.",
        "Load Testing",
        ["soak", "stability", "duration", "sla", "drift"],
        "intermediate",
        [
            "time-based stop",
            "gracePeriod",
            "sliceDuration",
            "two-phase"
        ]
    ),
    template!(
        "trace_replay",
        "Production Trace Replay",
        "Replay production traffic from a trace file with exact request timestamps.",
        "Datasets",
        ["trace", "replay", "production", "mooncake"],
        "advanced",
        ["fixed_schedule", "mooncake format", "trace replay"]
    ),
    template!(
        "user_files",
        "User Files (Templated Artifacts)",
        "Capture run parameters as JSON/YAML/text files materialized into the artifact directory.",
        "Advanced",
        ["artifacts", "user_files", "jinja2", "kubernetes"],
        "intermediate",
        [
            "artifacts.user_files",
            "jinja2 templating",
            "structured JSON output"
        ]
    ),
    template!(
        "warmup_profiling",
        "Warmup + Profiling (Two-Phase)",
        "Proper benchmark setup: warmup phase for JIT/cache, then clean profiling.",
        "Getting Started",
        ["warmup", "two-phase", "best-practice"],
        "beginner",
        ["multi-phase", "exclude_from_results"]
    ),
];

/// The template called `name`.
pub fn find(name: &str) -> Option<&'static Template> {
    TEMPLATES.iter().find(|t| t.name == name)
}

fn category_rank(t: &Template) -> usize {
    CATEGORIES
        .iter()
        .position(|c| *c == t.category)
        .unwrap_or(CATEGORIES.len())
}

/// The templates in `--list` order (category, then name), those whose category contains
/// `category` (any case) when one is given.
pub fn list(category: Option<&str>) -> Vec<&'static Template> {
    let mut all: Vec<&Template> = TEMPLATES.iter().collect();
    all.sort_by(|a, b| (category_rank(a), a.name).cmp(&(category_rank(b), b.name)));
    if let Some(c) = category {
        let c = c.to_lowercase();
        all.retain(|t| t.category.to_lowercase().contains(&c));
    }
    all
}

/// The templates `query` matches (any case) in a name, title, description, category, tag or
/// feature: those matching by name first, each group in `--list` order.
pub fn search(query: &str) -> Vec<&'static Template> {
    let q = query.to_lowercase();
    let hit = |t: &Template| {
        [t.name, t.title, t.description, t.category]
            .into_iter()
            .chain(t.tags.iter().copied())
            .chain(t.features.iter().copied())
            .any(|f| f.to_lowercase().contains(&q))
    };
    let (by_name, other): (Vec<_>, Vec<_>) = list(None)
        .into_iter()
        .filter(|t| hit(t))
        .partition(|t| t.name.to_lowercase().contains(&q));
    by_name.into_iter().chain(other).collect()
}

/// `templates` as `--list` prints them: a table per category (name, title, description; with
/// `verbose`, tags and difficulty too), each followed by a blank line.
pub fn table(templates: &[&Template], verbose: bool) -> String {
    let mut out = String::new();
    for cat in CATEGORIES {
        let rows: Vec<Vec<String>> = templates
            .iter()
            .filter(|t| t.category == cat)
            .map(|t| {
                let mut row = vec![t.name.into(), t.title.into(), t.description.into()];
                if verbose {
                    row.push(t.tags.join(", "));
                    row.push(t.difficulty.into());
                }
                row
            })
            .collect();
        if rows.is_empty() {
            continue;
        }
        let mut header = vec!["Name", "Title", "Description"];
        if verbose {
            header.extend(["Tags", "Difficulty"]);
        }
        // The name column is at least 26 wide, as AIPerf's is; the others fit their longest
        // cell. Columns are two spaces apart; no cell is wrapped.
        let widths: Vec<usize> = (0..header.len())
            .map(|i| {
                let cells = rows.iter().map(|r| r[i].chars().count());
                let w = cells.chain([header[i].len()]).max().unwrap_or(0);
                if i == 0 { w.max(26) } else { w }
            })
            .collect();
        let total = widths.iter().sum::<usize>() + 2 * (widths.len() - 1);
        let pad = total.saturating_sub(cat.len()) / 2;
        out.push_str(&format!("{}{cat}\n", " ".repeat(pad)));
        let line = |cells: &[&str]| {
            let mut l = String::new();
            for (i, c) in cells.iter().enumerate() {
                if i > 0 {
                    l.push_str("  ");
                }
                l.push_str(c);
                if i + 1 < cells.len() {
                    l.push_str(&" ".repeat(widths[i] - c.chars().count()));
                }
            }
            l.push('\n');
            l
        };
        out.push_str(&line(&header));
        for r in &rows {
            let cells: Vec<&str> = r.iter().map(String::as_str).collect();
            out.push_str(&line(&cells));
        }
        out.push('\n');
    }
    out
}

/// `text` with its model replaced by `model` and its endpoint URL by `url`, where AIPerf's
/// `config init` puts them: on the key the template declares (`model` gets the name, `models`
/// a one-item list; `url` the URL, `urls` a one-item list), top level before `benchmark:`;
/// a template declaring no model gets a top-level `models`, one without a URL key
/// `endpoint.urls`. The rest of the text, comments included, is kept.
pub fn customize(text: &str, model: Option<&str>, url: Option<&str>) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_owned).collect();
    if let Some(m) = model {
        let m = scalar(m);
        let (path, key): (&[&str], &str) = if let Some(k) = find_key(&lines, &[], "model")
            .map(|_| "model")
            .or(find_key(&lines, &[], "models").map(|_| "models"))
        {
            (&[], k)
        } else if find_key(&lines, &["benchmark"], "model").is_some() {
            (&["benchmark"], "model")
        } else if find_key(&lines, &["benchmark"], "models").is_some() {
            (&["benchmark"], "models")
        } else {
            (&[], "models")
        };
        let value = if key == "model" { m } else { format!("[{m}]") };
        set(&mut lines, path, key, &value);
    }
    if let Some(u) = url {
        let u = scalar(u);
        let has_envelope = find_key(&lines, &[], "benchmark").is_some();
        let path: &[&str] = if has_envelope {
            &["benchmark", "endpoint"]
        } else {
            &["endpoint"]
        };
        if find_key(&lines, path, "url").is_some() {
            set(&mut lines, path, "url", &u);
        } else {
            set(&mut lines, path, "urls", &format!("[{u}]"));
        }
    }
    let mut out = lines.join("\n");
    if text.ends_with('\n') {
        out.push('\n');
    }
    out
}

/// `s` as a YAML scalar that reads back as the string `s`: plain when it is safe, else
/// double-quoted.
fn scalar(s: &str) -> String {
    let plain = s.chars().next().is_some_and(|c| c.is_ascii_alphabetic())
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:@+".contains(c))
        && !matches!(
            s.to_ascii_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "null" | "y" | "n"
        );
    if plain {
        s.to_owned()
    } else {
        serde_json::to_string(s).unwrap_or_default()
    }
}

/// A block-mapping key line: its indent and key (`None` for blanks, comments, list items and
/// anything else).
fn key_of(line: &str) -> Option<(usize, &str)> {
    let body = line.trim_start();
    let indent = line.len() - body.len();
    if body.starts_with('#') || body.starts_with('-') {
        return None;
    }
    let (key, rest) = body.split_once(':')?;
    let simple = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c));
    (simple && (rest.is_empty() || rest.starts_with([' ', '\t']))).then_some((indent, key))
}

/// The line of `key` in the block mapping at `path` (each element a key of the one before).
fn find_key(lines: &[String], path: &[&str], key: &str) -> Option<usize> {
    let mut stack: Vec<(usize, &str)> = Vec::new();
    for (i, l) in lines.iter().enumerate() {
        let Some((indent, k)) = key_of(l) else {
            continue;
        };
        while stack.last().is_some_and(|(d, _)| *d >= indent) {
            stack.pop();
        }
        if k == key && stack.len() == path.len() && stack.iter().zip(path).all(|(s, p)| s.1 == *p) {
            return Some(i);
        }
        stack.push((indent, k));
    }
    None
}

/// Sets `key` under `path` to the YAML `value` (one line), replacing its old value and the
/// block lines under it, or adding it (and any missing parent) after the deepest parent
/// present.
fn set(lines: &mut Vec<String>, path: &[&str], key: &str, value: &str) {
    if let Some(i) = find_key(lines, path, key) {
        let indent = key_of(&lines[i]).map_or(0, |(d, _)| d);
        let mut last = i;
        for (j, l) in lines.iter().enumerate().skip(i + 1) {
            let body = l.trim_start();
            if body.is_empty() || body.starts_with('#') {
                continue;
            }
            let d = l.len() - body.len();
            if d > indent || (d == indent && body.starts_with("- ")) {
                last = j;
            } else {
                break;
            }
        }
        lines.drain(i + 1..=last);
        lines[i] = format!("{}{key}: {value}", " ".repeat(indent));
        return;
    }
    // The deepest parent present: insert what is missing right under it.
    let mut depth = path.len();
    let mut at = None;
    while depth > 0 {
        if let Some(i) = find_key(lines, &path[..depth - 1], path[depth - 1]) {
            at = Some(i);
            break;
        }
        depth -= 1;
    }
    let (mut pos, mut indent) = match at {
        Some(i) => (i + 1, key_of(&lines[i]).map_or(0, |(d, _)| d) + 2),
        None => (0, 0),
    };
    if at.is_none() {
        // Top level: after the leading comment block.
        pos = lines
            .iter()
            .position(|l| !(l.trim().is_empty() || l.trim_start().starts_with('#')))
            .unwrap_or(lines.len());
    }
    for p in &path[depth..] {
        lines.insert(pos, format!("{}{p}:", " ".repeat(indent)));
        pos += 1;
        indent += 2;
    }
    lines.insert(pos, format!("{}{key}: {value}", " ".repeat(indent)));
}
