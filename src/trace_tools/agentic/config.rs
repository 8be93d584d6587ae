//! The distribution config of `synthesize agentic-code`: its fields, defaults and checks as
//! AIPerf 0.13 reads them (unknown keys kept and written back to the manifest, top-level keys
//! also in camelCase, numbers given as strings accepted), read from a config JSON, a previous
//! run's `manifest.json` (its `generation_params`) or the built-in `default` config.

use serde_json::{Map, Value};

/// A config field's problem, with the path of the field.
pub type ConfigError = String;

/// Python's `repr` of a float, for messages (`100.0`, `0.5`, `1e-05`).
pub fn py_float(x: f64) -> String {
    if x.is_finite() && x == x.trunc() && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        serde_json::Number::from_f64(x).map_or_else(|| format!("{x}"), |n| n.to_string())
    }
}

/// Keys of an object that no field reads, in their order (AIPerf keeps and writes them).
type Extras = Vec<(String, Value)>;

/// One JSON object being read as a model: the fields taken so far, the rest kept as extras.
struct Reader<'a> {
    path: String,
    map: &'a Map<String, Value>,
    taken: Vec<&'static str>,
}

fn at(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

impl<'a> Reader<'a> {
    fn new(path: &str, v: &'a Value) -> Result<Self, ConfigError> {
        match v {
            Value::Object(map) => Ok(Self {
                path: path.to_string(),
                map,
                taken: Vec::new(),
            }),
            _ => Err(format!(
                "{}: Input should be a valid dictionary or object",
                if path.is_empty() { "config" } else { path }
            )),
        }
    }

    /// The value of `key` (absent: `None`), marked as read.
    fn get(&mut self, key: &'static str) -> Option<&'a Value> {
        self.taken.push(key);
        self.map.get(key)
    }

    fn err(&self, key: &str, why: impl std::fmt::Display) -> ConfigError {
        format!("{}: {why}", at(&self.path, key))
    }

    fn float_of(&self, key: &str, v: &Value) -> Result<f64, ConfigError> {
        let x = match v {
            Value::Number(n) => n.as_f64(),
            Value::String(s) => s.trim().parse::<f64>().ok(),
            Value::Bool(b) => Some(if *b { 1.0 } else { 0.0 }),
            _ => None,
        };
        x.ok_or_else(|| self.err(key, "Input should be a valid number"))
    }

    fn int_of(&self, key: &str, v: &Value) -> Result<i64, ConfigError> {
        let bad = || self.err(key, "Input should be a valid integer");
        match v {
            Value::Number(n) => n.as_i64().map_or_else(
                || match n.as_f64() {
                    Some(f) if f == f.trunc() && f.abs() < 9.0e18 => Ok(f as i64),
                    _ => Err(bad()),
                },
                Ok,
            ),
            Value::String(s) => s.trim().parse::<i64>().map_err(|_| bad()),
            Value::Bool(b) => Ok(i64::from(*b)),
            _ => Err(bad()),
        }
    }

    /// A float with a default, checked against `lo` (`>` or `>=`) and `hi` (`<=`).
    fn float(
        &mut self,
        key: &'static str,
        default: Option<f64>,
        bounds: Bound,
    ) -> Result<f64, ConfigError> {
        match self.get(key) {
            None => default.ok_or_else(|| self.err(key, "Field required")),
            Some(v) => {
                let x = self.float_of(key, v)?;
                bounds.check(x).map_err(|w| self.err(key, w))?;
                Ok(x)
            }
        }
    }

    /// An optional float (`null` or absent: none).
    fn opt_float(&mut self, key: &'static str, bounds: Bound) -> Result<Option<f64>, ConfigError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let x = self.float_of(key, v)?;
                bounds.check(x).map_err(|w| self.err(key, w))?;
                Ok(Some(x))
            }
        }
    }

    fn int(
        &mut self,
        key: &'static str,
        default: Option<i64>,
        bounds: Bound,
    ) -> Result<i64, ConfigError> {
        match self.get(key) {
            None => default.ok_or_else(|| self.err(key, "Field required")),
            Some(v) => {
                let x = self.int_of(key, v)?;
                bounds.check(x as f64).map_err(|w| self.err(key, w))?;
                Ok(x)
            }
        }
    }

    fn opt_int(&mut self, key: &'static str, bounds: Bound) -> Result<Option<i64>, ConfigError> {
        match self.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => {
                let x = self.int_of(key, v)?;
                bounds.check(x as f64).map_err(|w| self.err(key, w))?;
                Ok(Some(x))
            }
        }
    }

    fn boolean(&mut self, key: &'static str, default: bool) -> Result<bool, ConfigError> {
        match self.get(key) {
            None => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(Value::Number(n)) if n.as_i64() == Some(0) => Ok(false),
            Some(Value::Number(n)) if n.as_i64() == Some(1) => Ok(true),
            Some(Value::String(s)) => match s.to_ascii_lowercase().as_str() {
                "true" | "t" | "yes" | "y" | "on" | "1" => Ok(true),
                "false" | "f" | "no" | "n" | "off" | "0" => Ok(false),
                _ => Err(self.err(key, "Input should be a valid boolean")),
            },
            Some(_) => Err(self.err(key, "Input should be a valid boolean")),
        }
    }

    /// The keys no field took, in order.
    fn extras(&self) -> Extras {
        self.map
            .iter()
            .filter(|(k, _)| !self.taken.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

/// A numeric field's range.
#[derive(Clone, Copy)]
enum Bound {
    Any,
    Gt(f64),
    Ge(f64),
    Unit,
}

impl Bound {
    fn check(self, x: f64) -> Result<(), String> {
        let n = |v: f64| {
            if v == v.trunc() {
                format!("{}", v as i64)
            } else {
                py_float(v)
            }
        };
        match self {
            Self::Any => Ok(()),
            Self::Gt(lo) if x.partial_cmp(&lo) != Some(std::cmp::Ordering::Greater) => {
                Err(format!("Input should be greater than {}", n(lo)))
            }
            Self::Ge(lo) if x.partial_cmp(&lo).is_none_or(|o| o.is_lt()) => Err(format!(
                "Input should be greater than or equal to {}",
                n(lo)
            )),
            Self::Unit if x.is_nan() || x < 0.0 => {
                Err("Input should be greater than or equal to 0".into())
            }
            Self::Unit if x > 1.0 => Err("Input should be less than or equal to 1".into()),
            _ => Ok(()),
        }
    }
}

/// A lognormal from its real-space mean and median (mu, sigma derived), optionally bounded.
#[derive(Debug, Clone, PartialEq)]
pub struct Lognormal {
    pub mu: f64,
    pub sigma: f64,
    pub mean: f64,
    pub median: f64,
    pub min: Option<f64>,
    pub max: Option<f64>,
    extras: Extras,
}

impl Lognormal {
    /// mu = ln(median), sigma = sqrt(2 ln(mean / median)).
    pub fn from_mean_median(mean: f64, median: f64) -> Self {
        let ratio = mean / median;
        Self {
            mu: median.ln(),
            sigma: if ratio > 1.0 {
                (2.0 * ratio.ln()).sqrt()
            } else {
                0.0
            },
            mean,
            median,
            min: None,
            max: None,
            extras: Vec::new(),
        }
    }

    fn read(r: &mut Reader<'_>) -> Result<Self, ConfigError> {
        let mu = r.opt_float("mu", Bound::Any)?;
        let sigma = r.opt_float("sigma", Bound::Ge(0.0))?;
        let mean = r.float("mean", None, Bound::Gt(0.0))?;
        let median = r.float("median", None, Bound::Gt(0.0))?;
        let min = r.opt_float("min", Bound::Gt(0.0))?;
        let max = r.opt_float("max", Bound::Gt(0.0))?;
        let mut l = Self::from_mean_median(mean, median);
        (l.min, l.max) = (min, max);
        l.check(mu, sigma).map_err(|w| {
            format!(
                "{}: {w}",
                if r.path.is_empty() { "config" } else { &r.path }
            )
        })?;
        if let (Some(mu), Some(sigma)) = (mu, sigma) {
            (l.mu, l.sigma) = (mu, sigma);
        }
        Ok(l)
    }

    fn check(&self, mu: Option<f64>, sigma: Option<f64>) -> Result<(), String> {
        if self.mean < self.median {
            return Err(format!(
                "mean ({}) must be >= median ({}) for lognormal",
                py_float(self.mean),
                py_float(self.median)
            ));
        }
        if let (Some(lo), Some(hi)) = (self.min, self.max)
            && lo > hi
        {
            return Err(format!(
                "min ({}) must be <= max ({})",
                py_float(lo),
                py_float(hi)
            ));
        }
        if mu.is_some() != sigma.is_some() {
            return Err("mu and sigma must be supplied as a pair".into());
        }
        if mu.is_some_and(|m| !m.is_finite()) {
            return Err("mu must be finite".into());
        }
        if sigma.is_some_and(|s| !s.is_finite()) {
            return Err("sigma must be finite".into());
        }
        Ok(())
    }

    fn dump(&self, m: &mut Map<String, Value>) {
        m.insert("mu".into(), num(self.mu));
        m.insert("sigma".into(), num(self.sigma));
        m.insert("mean".into(), num(self.mean));
        m.insert("median".into(), num(self.median));
        m.insert("min".into(), opt_num(self.min));
        m.insert("max".into(), opt_num(self.max));
    }

    fn to_value(&self) -> Value {
        let mut m = Map::new();
        self.dump(&mut m);
        with_extras(m, &self.extras)
    }
}

fn num(x: f64) -> Value {
    serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
}

fn opt_num(x: Option<f64>) -> Value {
    x.map_or(Value::Null, num)
}

fn with_extras(mut m: Map<String, Value>, extras: &Extras) -> Value {
    for (k, v) in extras {
        m.insert(k.clone(), v.clone());
    }
    Value::Object(m)
}

/// Reads the sub-model at `key` with `read`, or its default when absent.
fn sub<T>(
    r: &mut Reader<'_>,
    key: &'static str,
    default: impl FnOnce() -> T,
    read: impl FnOnce(&mut Reader<'_>) -> Result<T, ConfigError>,
) -> Result<T, ConfigError> {
    let path = at(&r.path, key);
    match r.get(key) {
        None => Ok(default()),
        Some(v) => read(&mut Reader::new(&path, v)?),
    }
}

/// New tokens a turn: a lognormal, its mean and median scaled by `bias` when sampled.
#[derive(Debug, Clone, PartialEq)]
pub struct NewTokens {
    pub dist: Lognormal,
    pub bias: f64,
}

/// The inter-turn delay: agentic (fast) or human (slow) by a Bernoulli draw.
#[derive(Debug, Clone, PartialEq)]
pub struct Delay {
    pub agentic_fraction: f64,
    pub agentic: Lognormal,
    pub human: Lognormal,
    pub max: Option<f64>,
    extras: Extras,
}

/// The probabilistic reset: base * (1 + (scaling - 1) * input / max_prompt_tokens) a turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Reset {
    pub base_probability: f64,
    pub context_scaling: f64,
    extras: Extras,
}

/// The explicit turns-per-session mode.
#[derive(Debug, Clone, PartialEq)]
pub struct Turns {
    pub mean: i64,
    pub median: i64,
    pub min: i64,
    pub max: i64,
    pub allow_truncation: bool,
    pub max_session_attempts: Option<i64>,
    extras: Extras,
}

impl Turns {
    /// The bounded lognormal a session's turn count is drawn from.
    pub fn lognormal(&self) -> Lognormal {
        let mut l = Lognormal::from_mean_median(self.mean as f64, self.median as f64);
        (l.min, l.max) = (Some(self.min as f64), Some(self.max as f64));
        l
    }
}

/// The prefix cache layers: L1 (global), L1.5 (per group), L2 (per session, sampled).
#[derive(Debug, Clone, PartialEq)]
pub struct Cache {
    pub layer1_tokens: i64,
    pub layer1_5_tokens: i64,
    pub layer2: Lognormal,
    pub num_groups: i64,
    pub zipf_alpha: f64,
    group_extras: Extras,
    extras: Extras,
}

/// The whole config (AIPerf's `SessionDistributionConfig`).
#[derive(Debug, Clone, PartialEq)]
pub struct Config {
    pub new_tokens: NewTokens,
    pub generation_length: Lognormal,
    pub delay: Delay,
    pub reset: Option<Reset>,
    pub turns: Option<Turns>,
    pub max_prompt_tokens: i64,
    pub block_size: i64,
    pub cache: Cache,
    pub restart_initial_probability: f64,
    pub restart_turn_range: [i64; 2],
    extras: Extras,
}

impl Default for Config {
    fn default() -> Self {
        // An empty object takes every default; reading it cannot fail.
        Self::from_value(&Value::Object(Map::new())).unwrap_or_else(|_| unreachable!())
    }
}

/// The top-level fields' camelCase spellings, accepted as AIPerf accepts them.
const CAMEL: [(&str, &str); 8] = [
    ("newTokensPerTurn", "new_tokens_per_turn"),
    ("generationLength", "generation_length"),
    ("interTurnDelay", "inter_turn_delay"),
    ("maxPromptTokens", "max_prompt_tokens"),
    ("blockSize", "block_size"),
    ("restartInitialProbability", "restart_initial_probability"),
    ("restartTurnRange", "restart_turn_range"),
    ("restartFraction", "restart_fraction"),
];

impl Config {
    /// Reads a config object (the fields AIPerf reads, its defaults and its checks).
    ///
    /// # Errors
    /// The first field that is missing, of the wrong type or out of range, or a rule broken.
    pub fn from_value(v: &Value) -> Result<Self, ConfigError> {
        let Value::Object(given) = v else {
            return Err("config: Input should be a valid dictionary or object".into());
        };
        // The renames before validation: camelCase keys, the dropped system_prompt_tokens,
        // restart_fraction as restart_initial_probability, turns without reset turning reset off.
        let mut data = Map::new();
        for (k, val) in given {
            let key = CAMEL
                .iter()
                .find(|(c, _)| c == k)
                .map_or(k.as_str(), |(_, s)| s);
            data.insert(key.to_string(), val.clone());
        }
        data.remove("system_prompt_tokens");
        if let Some(fraction) = data.remove("restart_fraction") {
            if let Some(p) = data.get("restart_initial_probability")
                && !p.is_null()
                && as_f64(p) != as_f64(&fraction)
            {
                return Err(
                    "restart_fraction cannot differ from restart_initial_probability".into(),
                );
            }
            data.insert("restart_initial_probability".into(), fraction);
        }
        if data.get("turns").is_some_and(|t| !t.is_null()) && !data.contains_key("reset") {
            data.insert("reset".into(), Value::Null);
        }
        let data = Value::Object(data);
        let mut r = Reader::new("", &data)?;
        let new_tokens = sub(
            &mut r,
            "new_tokens_per_turn",
            || NewTokens {
                dist: Lognormal::from_mean_median(3500.0, 1800.0),
                bias: 1.0,
            },
            |r| {
                let mut dist = Lognormal::read(r)?;
                let bias = r.float("bias", Some(1.0), Bound::Gt(0.0))?;
                dist.extras = r.extras();
                Ok(NewTokens { dist, bias })
            },
        )?;
        let generation_length = sub(
            &mut r,
            "generation_length",
            || Lognormal::from_mean_median(500.0, 300.0),
            read_lognormal,
        )?;
        let delay = sub(&mut r, "inter_turn_delay", default_delay, |r| {
            let agentic_fraction = r.float("agentic_fraction", Some(0.7), Bound::Unit)?;
            let agentic = sub(
                r,
                "agentic_delay",
                || Lognormal::from_mean_median(2500.0, 1800.0),
                read_lognormal,
            )?;
            let human = sub(
                r,
                "human_delay",
                || Lognormal::from_mean_median(40000.0, 25000.0),
                read_lognormal,
            )?;
            let max = r.opt_float("max", Bound::Ge(0.0))?;
            Ok(Delay {
                agentic_fraction,
                agentic,
                human,
                max,
                extras: r.extras(),
            })
        })?;
        let reset = match r.get("reset") {
            Some(Value::Null) => None,
            None => Some(Reset {
                base_probability: 0.02,
                context_scaling: 2.0,
                extras: Vec::new(),
            }),
            Some(v) => {
                let mut rr = Reader::new("reset", v)?;
                Some(Reset {
                    base_probability: rr.float("base_probability", Some(0.02), Bound::Unit)?,
                    context_scaling: rr.float("context_scaling", Some(2.0), Bound::Ge(1.0))?,
                    extras: rr.extras(),
                })
            }
        };
        let turns = match r.get("turns") {
            None | Some(Value::Null) => None,
            Some(v) => Some(read_turns(&mut Reader::new("turns", v)?)?),
        };
        let max_prompt_tokens = r.int("max_prompt_tokens", Some(200_000), Bound::Ge(1.0))?;
        let block_size = r.int("block_size", Some(512), Bound::Ge(1.0))?;
        let cache = sub(&mut r, "cache", default_cache, read_cache)?;
        let restart_initial_probability =
            r.float("restart_initial_probability", Some(0.0), Bound::Unit)?;
        let restart_turn_range = match r.get("restart_turn_range") {
            None => [5, 15],
            Some(Value::Array(a)) if a.len() == 2 => [
                r.int_of("restart_turn_range.0", &a[0])?,
                r.int_of("restart_turn_range.1", &a[1])?,
            ],
            Some(Value::Array(a)) => {
                return Err(format!(
                    "restart_turn_range: List should have {} 2 items after validation, not {}",
                    if a.len() < 2 { "at least" } else { "at most" },
                    a.len()
                ));
            }
            Some(_) => return Err("restart_turn_range: Input should be a valid list".into()),
        };
        let cfg = Self {
            new_tokens,
            generation_length,
            delay,
            reset,
            turns,
            max_prompt_tokens,
            block_size,
            cache,
            restart_initial_probability,
            restart_turn_range,
            extras: r.extras(),
        };
        cfg.check()?;
        Ok(cfg)
    }

    /// The rules across fields (AIPerf's after-validation checks).
    fn check(&self) -> Result<(), ConfigError> {
        let [lo, hi] = self.restart_turn_range;
        if lo < 1 {
            return Err("restart_turn_range minimum must be >= 1".into());
        }
        if hi <= lo {
            return Err("restart_turn_range must be ordered as [min, max)".into());
        }
        let Some(turns) = &self.turns else {
            return Ok(());
        };
        if self.reset.is_some() {
            return Err("turns mode cannot be combined with reset".into());
        }
        if self.restart_initial_probability != 0.0 {
            return Err("turns mode cannot be combined with restart_initial_probability".into());
        }
        let min_l2 = self.cache.layer2.min.map_or(1, |m| m as i64);
        let min_new = self.new_tokens.dist.min.map_or(1, |m| m as i64);
        let min_output = self.generation_length.max.map_or(30, |m| 30.min(m as i64));
        let mut input = self.cache.layer1_tokens + self.cache.layer1_5_tokens + min_l2;
        if input >= self.max_prompt_tokens {
            return Err(
                "turns mode is impossible: minimum initial context exceeds max_prompt_tokens"
                    .into(),
            );
        }
        if turns.allow_truncation {
            return Ok(());
        }
        for _ in 1..turns.min {
            input += min_output + min_new;
            if input >= self.max_prompt_tokens {
                return Err(
                    "turns mode is impossible: minimum turn count cannot fit under \
                            max_prompt_tokens"
                        .into(),
                );
            }
        }
        Ok(())
    }

    /// `--max-isl` (the context limit) and `--max-osl` (the output lengths' bound), checked as
    /// a config that gave them would be.
    ///
    /// # Errors
    /// The config with them breaks a rule.
    pub fn with_overrides(
        mut self,
        max_isl: Option<u64>,
        max_osl: Option<u64>,
    ) -> Result<Self, ConfigError> {
        if max_isl.is_none() && max_osl.is_none() {
            return Ok(self);
        }
        if let Some(isl) = max_isl {
            self.max_prompt_tokens = i64::try_from(isl)
                .map_err(|_| "max_prompt_tokens: Input should be a valid integer".to_string())?;
        }
        if let Some(osl) = max_osl {
            self.generation_length.max = Some(osl as f64);
        }
        // Round trip through the object form: every check runs again.
        Self::from_value(&self.to_value())
    }

    /// The config as AIPerf writes it in `manifest.json` (`generation_params`).
    pub fn to_value(&self) -> Value {
        let mut m = Map::new();
        let mut ntp = Map::new();
        self.new_tokens.dist.dump(&mut ntp);
        ntp.insert("bias".into(), num(self.new_tokens.bias));
        m.insert(
            "new_tokens_per_turn".into(),
            with_extras(ntp, &self.new_tokens.dist.extras),
        );
        m.insert(
            "generation_length".into(),
            self.generation_length.to_value(),
        );
        let mut d = Map::new();
        d.insert("agentic_fraction".into(), num(self.delay.agentic_fraction));
        d.insert("agentic_delay".into(), self.delay.agentic.to_value());
        d.insert("human_delay".into(), self.delay.human.to_value());
        d.insert("max".into(), opt_num(self.delay.max));
        m.insert(
            "inter_turn_delay".into(),
            with_extras(d, &self.delay.extras),
        );
        m.insert(
            "reset".into(),
            self.reset.as_ref().map_or(Value::Null, |r| {
                let mut o = Map::new();
                o.insert("base_probability".into(), num(r.base_probability));
                o.insert("context_scaling".into(), num(r.context_scaling));
                with_extras(o, &r.extras)
            }),
        );
        m.insert(
            "turns".into(),
            self.turns.as_ref().map_or(Value::Null, |t| {
                let mut o = Map::new();
                o.insert("mean".into(), t.mean.into());
                o.insert("median".into(), t.median.into());
                o.insert("min".into(), t.min.into());
                o.insert("max".into(), t.max.into());
                o.insert("allow_truncation".into(), t.allow_truncation.into());
                o.insert(
                    "max_session_attempts".into(),
                    t.max_session_attempts.map_or(Value::Null, Value::from),
                );
                with_extras(o, &t.extras)
            }),
        );
        m.insert("max_prompt_tokens".into(), self.max_prompt_tokens.into());
        m.insert("block_size".into(), self.block_size.into());
        let c = &self.cache;
        let mut o = Map::new();
        o.insert("layer1_tokens".into(), c.layer1_tokens.into());
        o.insert("layer1_5_tokens".into(), c.layer1_5_tokens.into());
        o.insert("layer2".into(), c.layer2.to_value());
        let mut g = Map::new();
        g.insert("num_groups".into(), c.num_groups.into());
        g.insert("zipf_alpha".into(), num(c.zipf_alpha));
        o.insert("layer1_5_groups".into(), with_extras(g, &c.group_extras));
        m.insert("cache".into(), with_extras(o, &c.extras));
        m.insert(
            "restart_initial_probability".into(),
            num(self.restart_initial_probability),
        );
        m.insert(
            "restart_turn_range".into(),
            Value::Array(self.restart_turn_range.iter().map(|&x| x.into()).collect()),
        );
        with_extras(m, &self.extras)
    }
}

fn as_f64(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    }
}

fn read_lognormal(r: &mut Reader<'_>) -> Result<Lognormal, ConfigError> {
    let mut l = Lognormal::read(r)?;
    l.extras = r.extras();
    Ok(l)
}

fn default_delay() -> Delay {
    Delay {
        agentic_fraction: 0.7,
        agentic: Lognormal::from_mean_median(2500.0, 1800.0),
        human: Lognormal::from_mean_median(40000.0, 25000.0),
        max: None,
        extras: Vec::new(),
    }
}

fn default_cache() -> Cache {
    Cache {
        layer1_tokens: 32_000,
        layer1_5_tokens: 20_000,
        layer2: Lognormal::from_mean_median(10_000.0, 5_000.0),
        num_groups: 50,
        zipf_alpha: 1.2,
        group_extras: Vec::new(),
        extras: Vec::new(),
    }
}

fn read_cache(r: &mut Reader<'_>) -> Result<Cache, ConfigError> {
    let layer1_tokens = r.int("layer1_tokens", Some(32_000), Bound::Ge(0.0))?;
    let layer1_5_tokens = r.int("layer1_5_tokens", Some(20_000), Bound::Ge(0.0))?;
    let layer2 = sub(
        r,
        "layer2",
        || Lognormal::from_mean_median(10_000.0, 5_000.0),
        read_lognormal,
    )?;
    let (num_groups, zipf_alpha, group_extras) = sub(
        r,
        "layer1_5_groups",
        || (50, 1.2, Vec::new()),
        |g| {
            Ok((
                g.int("num_groups", Some(50), Bound::Ge(1.0))?,
                g.float("zipf_alpha", Some(1.2), Bound::Ge(0.0))?,
                g.extras(),
            ))
        },
    )?;
    Ok(Cache {
        layer1_tokens,
        layer1_5_tokens,
        layer2,
        num_groups,
        zipf_alpha,
        group_extras,
        extras: r.extras(),
    })
}

fn read_turns(r: &mut Reader<'_>) -> Result<Turns, ConfigError> {
    let mean = r.int("mean", None, Bound::Gt(0.0))?;
    let median = r.int("median", None, Bound::Gt(0.0))?;
    let min = r.int("min", None, Bound::Gt(0.0))?;
    let max = r.int("max", None, Bound::Gt(0.0))?;
    let allow_truncation = r.boolean("allow_truncation", false)?;
    let mut max_session_attempts = r.opt_int("max_session_attempts", Bound::Ge(1.0))?;
    let fail = |w: String| format!("turns: {w}");
    if mean < median {
        return Err(fail(format!(
            "mean ({mean}) must be >= median ({median}) for lognormal"
        )));
    }
    if min > median {
        return Err(fail(format!("min ({min}) must be <= median ({median})")));
    }
    if mean > max {
        return Err(fail(format!("mean ({mean}) must be <= max ({max})")));
    }
    if min > max {
        return Err(fail(format!("min ({min}) must be <= max ({max})")));
    }
    if allow_truncation {
        if max_session_attempts.is_some() {
            return Err(fail(
                "max_session_attempts cannot be set when allow_truncation is true".into(),
            ));
        }
    } else if max_session_attempts.is_none() {
        max_session_attempts = Some(100);
    }
    Ok(Turns {
        mean,
        median,
        min,
        max,
        allow_truncation,
        max_session_attempts,
        extras: r.extras(),
    })
}

/// The configs built in by name (`--config default`), as AIPerf 0.13 bundles them.
pub const BUNDLED: [(&str, &str); 1] = [("default", DEFAULT_JSON)];

/// AIPerf 0.13's bundled `default` config (not the same as no `--config`, which takes the
/// fields' defaults).
const DEFAULT_JSON: &str = r#"{
  "new_tokens_per_turn": {"mean": 6000, "median": 6000, "max": 10000, "bias": 1.1},
  "generation_length": {"mean": 1000, "median": 1000, "max": 1500},
  "inter_turn_delay": {
    "agentic_fraction": 0.7,
    "agentic_delay": {"mean": 2500, "median": 1800, "max": 10000},
    "human_delay": {"mean": 40000, "median": 25000, "max": 120000},
    "max": null
  },
  "reset": {"base_probability": 0.01, "context_scaling": 1.5},
  "max_prompt_tokens": 167000,
  "block_size": 512,
  "cache": {
    "layer1_tokens": 32000,
    "layer1_5_tokens": 0,
    "layer2": {"mean": 15000, "median": 5000, "max": 30000},
    "layer1_5_groups": {"num_groups": 1, "zipf_alpha": 0.6}
  }
}"#;

/// Where a `--config` was found: the name AIPerf gives the run, and the config.
///
/// # Errors
/// Not a bundled name nor a file; unreadable; not JSON; not an object; the JSON Schema
/// reference (`spec`); a bad field.
pub fn load(path_or_name: &str) -> Result<(String, Config), ConfigError> {
    if path_or_name == "spec" {
        return Err("spec.json is a JSON Schema reference, not a loadable config".into());
    }
    if let Some((_, text)) = BUNDLED.iter().find(|(n, _)| *n == path_or_name) {
        let v: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        return Ok((path_or_name.to_string(), Config::from_value(&v)?));
    }
    let path = std::path::Path::new(path_or_name);
    if !path.is_file() {
        let names: Vec<String> = BUNDLED.iter().map(|(n, _)| format!("'{n}'")).collect();
        return Err(format!(
            "Config '{path_or_name}' not found. Bundled configs: [{}]. Or provide a file path.",
            names.join(", ")
        ));
    }
    let bytes = std::fs::read(path).map_err(|e| format!("{path_or_name}: {e}"))?;
    let data: Value = serde_json::from_slice(&bytes)
        .map_err(|e| format!("Config '{path_or_name}' is not valid JSON: {e}"))?;
    let Value::Object(obj) = &data else {
        return Err(format!("Config '{path_or_name}' must be a JSON object"));
    };
    if obj.get("$id").and_then(Value::as_str) == Some(SCHEMA_ID) && obj.contains_key("properties") {
        return Err("spec.json is a JSON Schema reference, not a loadable config".into());
    }
    let params = match obj.get("generation_params") {
        Some(p @ Value::Object(_)) => p,
        Some(_) => {
            return Err(format!(
                "Config '{path_or_name}' generation_params must be a JSON object"
            ));
        }
        None => &data,
    };
    let name = path.file_stem().map_or_else(
        || path_or_name.to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    Ok((name, Config::from_value(params)?))
}

/// The `$id` of AIPerf's config JSON Schema, refused as a config.
const SCHEMA_ID: &str = "https://ai-dynamo.github.io/aiperf/schemas/agentic-code-gen-config.json";
