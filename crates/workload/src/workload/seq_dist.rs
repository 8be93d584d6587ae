//! `--seq-dist` / `--sequence-distribution`: a mix of (ISL, OSL) pairs with probabilities, each
//! request drawing one pair (AIPerf's `common/models/sequence_distribution.py`).
//!
//! Three spellings, chosen by the first character of the trimmed text:
//! - JSON (`{`): `{"pairs":[{"isl":256,"isl_stddev":10,"osl":128,"osl_stddev":5,"prob":40},…]}`;
//! - bracket (`[` … `]`): `[(256,128):40,(512|20,256|10):60]`, every `(ISL,OSL):PROB` group found
//!   in the text is a pair (text between groups is skipped, as AIPerf's `finditer` does);
//! - semicolon (anything else): `256,128:40;512|20,256|10:60`, each non-empty piece must be one
//!   whole `ISL[|SD],OSL[|SD]:PROB`.
//!
//! Probabilities are percentages that must sum to 100 (within 1e-6 + 1e-6·100, NumPy's
//! `isclose`). A draw picks the first pair whose cumulative probability exceeds a uniform
//! `[0, 1)` number, then a length of `max(1, ceil(N(mean, sd)))` truncated at zero when the pair
//! gives a standard deviation, the mean itself otherwise.

use rand::RngExt;
use rand::rngs::StdRng;
use rand_distr::{Distribution, Normal};
use serde_json::Value;

/// One (ISL, OSL) pair of a distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct SeqPair {
    pub isl: u32,
    pub isl_stddev: f64,
    pub osl: u32,
    pub osl_stddev: f64,
    /// Percent, 0–100.
    pub probability: f64,
}

/// A parsed, validated distribution.
#[derive(Clone, Debug, PartialEq)]
pub struct SeqDist {
    pairs: Vec<SeqPair>,
    /// Cumulative probabilities as fractions, one per pair.
    cumulative: Vec<f64>,
}

/// Why a distribution string was refused.
#[derive(Clone, Debug, PartialEq)]
pub struct SeqDistError(pub String);

impl std::fmt::Display for SeqDistError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SeqDistError {}

fn fail<T>(msg: impl Into<String>) -> Result<T, SeqDistError> {
    Err(SeqDistError(msg.into()))
}

impl SeqDist {
    /// Parses any of the three spellings and checks every pair and the probability sum.
    ///
    /// # Errors
    /// A message naming what is wrong (the pair, the field or the sum).
    pub fn parse(text: &str) -> Result<Self, SeqDistError> {
        let t = text.trim();
        if t.is_empty() {
            return fail("the distribution is empty");
        }
        let pairs = if t.starts_with('{') {
            parse_json(t)?
        } else if t.starts_with('[') && t.ends_with(']') {
            parse_bracket(&t[1..t.len() - 1])?
        } else {
            parse_semicolon(t)?
        };
        Self::new(pairs)
    }

    /// A distribution of already-built pairs.
    ///
    /// # Errors
    /// An empty list, a zero length, a negative standard deviation, a probability outside
    /// 0–100, or probabilities that do not sum to 100.
    pub fn new(pairs: Vec<SeqPair>) -> Result<Self, SeqDistError> {
        if pairs.is_empty() {
            return fail("the distribution has no pair");
        }
        for p in &pairs {
            let name = pair_name(p);
            if p.isl == 0 || p.osl == 0 {
                return fail(format!("{name}: ISL and OSL must be positive"));
            }
            let valid_sd = |sd: f64| sd >= 0.0 && sd.is_finite();
            if !valid_sd(p.isl_stddev) || !valid_sd(p.osl_stddev) {
                return fail(format!("{name}: standard deviations must be non-negative"));
            }
            if !(0.0..=100.0).contains(&p.probability) {
                return fail(format!(
                    "{name}: probability must be in [0, 100] (a percentage)"
                ));
            }
        }
        let total: f64 = pairs.iter().map(|p| p.probability).sum();
        if (total - 100.0).abs() > 1e-6 + 1e-6 * 100.0 {
            return fail(format!(
                "probabilities must sum to 100 (percentages), got {total}"
            ));
        }
        let mut acc = 0.0;
        let cumulative = pairs
            .iter()
            .map(|p| {
                acc += p.probability / 100.0;
                acc
            })
            .collect();
        Ok(Self { pairs, cumulative })
    }

    /// The pairs, in the order given.
    pub fn pairs(&self) -> &[SeqPair] {
        &self.pairs
    }

    /// Index of the pair a uniform `[0, 1)` number `u` selects: the count of cumulative
    /// probabilities `<= u` (NumPy's `searchsorted(side="right")`), capped at the last pair.
    pub fn index_for(&self, u: f64) -> usize {
        let i = self.cumulative.partition_point(|&c| c <= u);
        i.min(self.pairs.len() - 1)
    }

    /// Draws one (ISL, OSL) pair.
    pub fn sample(&self, rng: &mut StdRng) -> (u32, u32) {
        let u: f64 = rng.random();
        let p = &self.pairs[self.index_for(u)];
        let isl = if p.isl_stddev > 0.0 {
            positive_normal_integer(f64::from(p.isl), p.isl_stddev, rng)
        } else {
            p.isl
        };
        let osl = if p.osl_stddev > 0.0 {
            positive_normal_integer(f64::from(p.osl), p.osl_stddev, rng)
        } else {
            p.osl
        };
        (isl, osl)
    }
}

fn pair_name(p: &SeqPair) -> String {
    format!("pair ({},{}):{}", p.isl, p.osl, p.probability)
}

/// AIPerf's `sample_positive_normal_integer`: `max(1, round(mean))` (ties to even) when
/// `stddev <= 0`; otherwise a normal draw rejected while below zero (at most 10,000 tries, then
/// the mean clamped at zero), rounded up, at least 1.
pub fn positive_normal_integer(mean: f64, stddev: f64, rng: &mut StdRng) -> u32 {
    let x = match Normal::new(mean, stddev) {
        Ok(normal) if stddev > 0.0 && mean.is_finite() => (0..10_000)
            .map(|_| normal.sample(rng))
            .find(|&x| x >= 0.0)
            .unwrap_or(mean.max(0.0))
            .ceil(),
        _ => mean.round_ties_even(),
    };
    // `as` saturates: huge values become u32::MAX, negative or NaN ones 0 (then 1).
    (x as u32).max(1)
}

// ----- spellings -----

/// A cursor over one pair's text, matching AIPerf's regular expressions piece by piece.
struct Cursor<'a> {
    s: &'a [u8],
    i: usize,
}

impl Cursor<'_> {
    fn spaces(&mut self) {
        while self.s.get(self.i).is_some_and(u8::is_ascii_whitespace) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        let hit = self.s.get(self.i) == Some(&c);
        self.i += usize::from(hit);
        hit
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.s.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    /// `\d+`
    fn integer(&mut self) -> Option<u32> {
        let start = self.i;
        (self.digits() > 0).then_some(())?;
        let text = std::str::from_utf8(&self.s[start..self.i]).ok()?;
        // Lengths past u32 are refused as unparsable rather than wrapped.
        text.parse().ok()
    }

    /// `\d+(\.\d+)?|\.\d+`
    fn number(&mut self) -> Option<f64> {
        let start = self.i;
        if self.digits() > 0 {
            let save = self.i;
            if self.eat(b'.') && self.digits() == 0 {
                self.i = save;
            }
        } else if !self.eat(b'.') || self.digits() == 0 {
            self.i = start;
            return None;
        }
        std::str::from_utf8(&self.s[start..self.i])
            .ok()?
            .parse()
            .ok()
    }

    /// `\d+(\|NUM)?`
    fn length(&mut self) -> Option<(u32, f64)> {
        let n = self.integer()?;
        let save = self.i;
        let sd = if self.eat(b'|') {
            match self.number() {
                Some(sd) => sd,
                None => {
                    self.i = save;
                    0.0
                }
            }
        } else {
            0.0
        };
        Some((n, sd))
    }

    /// `ISL[|SD]\s*,\s*OSL[|SD]`
    fn lengths(&mut self) -> Option<((u32, f64), (u32, f64))> {
        let isl = self.length()?;
        self.spaces();
        self.eat(b',').then_some(())?;
        self.spaces();
        let osl = self.length()?;
        Some((isl, osl))
    }

    /// `\s*:\s*NUM`
    fn probability(&mut self) -> Option<f64> {
        self.spaces();
        self.eat(b':').then_some(())?;
        self.spaces();
        self.number()
    }
}

fn pair(((isl, isl_stddev), (osl, osl_stddev)): ((u32, f64), (u32, f64)), p: f64) -> SeqPair {
    SeqPair {
        isl,
        isl_stddev,
        osl,
        osl_stddev,
        probability: p,
    }
}

fn parse_semicolon(t: &str) -> Result<Vec<SeqPair>, SeqDistError> {
    let mut pairs = Vec::new();
    for piece in t.split(';').map(str::trim).filter(|p| !p.is_empty()) {
        let mut c = Cursor {
            s: piece.as_bytes(),
            i: 0,
        };
        let parsed = c.lengths().and_then(|l| Some(pair(l, c.probability()?)));
        match parsed {
            Some(p) if c.i == piece.len() => pairs.push(p),
            _ => {
                return fail(format!(
                    "`{piece}` is not a pair: expected ISL[|ISL_STDDEV],OSL[|OSL_STDDEV]:PROB"
                ));
            }
        }
    }
    if pairs.is_empty() {
        return fail("no pair found (expected ISL,OSL:PROB;ISL,OSL:PROB…)");
    }
    Ok(pairs)
}

fn parse_bracket(content: &str) -> Result<Vec<SeqPair>, SeqDistError> {
    let s = content.as_bytes();
    let mut pairs = Vec::new();
    let mut i = 0;
    while i < s.len() {
        if s[i] != b'(' {
            i += 1;
            continue;
        }
        let mut c = Cursor { s, i: i + 1 };
        let matched = (|| {
            c.spaces();
            let l = c.lengths()?;
            c.spaces();
            c.eat(b')').then_some(())?;
            Some(pair(l, c.probability()?))
        })();
        match matched {
            Some(p) => {
                pairs.push(p);
                i = c.i;
            }
            None => i += 1,
        }
    }
    if pairs.is_empty() {
        return fail("no pair found in the bracket form (expected [(ISL,OSL):PROB,…])");
    }
    Ok(pairs)
}

/// Python's `int(x)` of a JSON value: a number truncated toward zero, or an integer string.
fn json_int(v: &Value, key: &str, i: usize) -> Result<u32, SeqDistError> {
    let n = match v {
        Value::Number(n) => n.as_f64().map(f64::trunc),
        Value::String(s) => s.trim().parse::<i64>().ok().map(|n| n as f64),
        _ => None,
    };
    match n {
        Some(n) if n <= 0.0 => fail(format!("pair {i}: `{key}` must be positive")),
        Some(n) if n <= f64::from(u32::MAX) => Ok(n as u32),
        _ => fail(format!("pair {i}: `{key}` is not an integer")),
    }
}

/// Python's `float(x)` of a JSON value.
fn json_float(v: &Value, key: &str, i: usize) -> Result<f64, SeqDistError> {
    let n = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => s.trim().parse().ok(),
        _ => None,
    };
    n.ok_or_else(|| SeqDistError(format!("pair {i}: `{key}` is not a number")))
}

fn parse_json(t: &str) -> Result<Vec<SeqPair>, SeqDistError> {
    let v: Value =
        serde_json::from_str(t).map_err(|e| SeqDistError(format!("invalid JSON: {e}")))?;
    let Some(list) = v.get("pairs") else {
        return fail("the JSON form must have a `pairs` key");
    };
    let Some(list) = list.as_array() else {
        return fail("`pairs` must be a list");
    };
    let mut pairs = Vec::with_capacity(list.len());
    for (i, p) in list.iter().enumerate() {
        let Some(obj) = p.as_object() else {
            return fail(format!("pair {i} is not an object"));
        };
        let mut missing: Vec<&str> = ["isl", "osl", "prob"]
            .into_iter()
            .filter(|k| !obj.contains_key(*k))
            .collect();
        if !missing.is_empty() {
            missing.sort_unstable();
            return fail(format!("pair {i} misses {}", missing.join(", ")));
        }
        let sd = |k: &str| obj.get(k).map_or(Ok(0.0), |v| json_float(v, k, i));
        pairs.push(SeqPair {
            isl: json_int(&obj["isl"], "isl", i)?,
            isl_stddev: sd("isl_stddev")?,
            osl: json_int(&obj["osl"], "osl", i)?,
            osl_stddev: sd("osl_stddev")?,
            probability: json_float(&obj["prob"], "prob", i)?,
        });
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn p(isl: u32, isl_sd: f64, osl: u32, osl_sd: f64, prob: f64) -> SeqPair {
        SeqPair {
            isl,
            isl_stddev: isl_sd,
            osl,
            osl_stddev: osl_sd,
            probability: prob,
        }
    }

    fn pairs(s: &str) -> Vec<SeqPair> {
        SeqDist::parse(s)
            .unwrap_or_else(|e| panic!("{s}: {e}"))
            .pairs()
            .to_vec()
    }

    #[test]
    fn semicolon_form() {
        assert_eq!(
            pairs("128,64:25;512,128:50;1024,256:25"),
            vec![
                p(128, 0.0, 64, 0.0, 25.0),
                p(512, 0.0, 128, 0.0, 50.0),
                p(1024, 0.0, 256, 0.0, 25.0)
            ]
        );
        assert_eq!(
            pairs(" 256|10,128|5:40; 512|20.5,256|.5 : 60 ;"),
            vec![p(256, 10.0, 128, 5.0, 40.0), p(512, 20.5, 256, 0.5, 60.0)]
        );
        assert_eq!(
            pairs("256 , 128 :33.5;1,1:66.5")[0],
            p(256, 0.0, 128, 0.0, 33.5)
        );
        assert_eq!(pairs("7,3:100"), vec![p(7, 0.0, 3, 0.0, 100.0)]);
    }

    #[test]
    fn bracket_form() {
        assert_eq!(
            pairs("[(256,128):40,(512,256):60]"),
            vec![p(256, 0.0, 128, 0.0, 40.0), p(512, 0.0, 256, 0.0, 60.0)]
        );
        assert_eq!(
            pairs("[( 256|10 , 128|5 ) : 40, (512|20,256|10):60]"),
            vec![p(256, 10.0, 128, 5.0, 40.0), p(512, 20.0, 256, 10.0, 60.0)]
        );
        // As AIPerf's `finditer`: text between groups is skipped.
        assert_eq!(
            pairs("[junk (1,2):100 more]"),
            vec![p(1, 0.0, 2, 0.0, 100.0)]
        );
    }

    #[test]
    fn json_form() {
        assert_eq!(
            pairs(
                r#"{"pairs":[{"isl":256,"isl_stddev":10,"osl":128,"osl_stddev":5,"prob":40},
                   {"isl":"512","osl":256.9,"prob":"60"}]}"#
            ),
            vec![p(256, 10.0, 128, 5.0, 40.0), p(512, 0.0, 256, 0.0, 60.0)]
        );
    }

    #[test]
    fn every_bad_spelling_is_refused_with_its_reason() {
        for (s, why) in [
            ("", "empty"),
            ("   ", "empty"),
            ("abc", "is not a pair"),
            ("256,128", "is not a pair"),
            ("256;128:100", "is not a pair"),
            ("256|x,128:100", "is not a pair"),
            ("256,128:40.", "is not a pair"),
            ("-5,128:100", "is not a pair"),
            ("256,128:40", "sum to 100"),
            ("256,128:0.4;512,256:0.6", "sum to 100"),
            ("256,128:150;1,1:-50", "is not a pair"),
            ("256,128:150", "[0, 100]"),
            ("0,128:100", "must be positive"),
            ("256,0:100", "must be positive"),
            ("99999999999,1:100", "is not a pair"),
            ("[]", "no pair found"),
            ("[256,128:100]", "no pair found"),
            ("{", "invalid JSON"),
            (r#"{"p":[]}"#, "`pairs` key"),
            (r#"{"pairs":3}"#, "must be a list"),
            (r#"{"pairs":[]}"#, "no pair"),
            (r#"{"pairs":[{"isl":1,"prob":100}]}"#, "misses osl"),
            (
                r#"{"pairs":[{"isl":"a","osl":1,"prob":100}]}"#,
                "not an integer",
            ),
            (
                r#"{"pairs":[{"isl":1,"osl":1,"prob":null}]}"#,
                "not a number",
            ),
            (
                r#"{"pairs":[{"isl":1,"osl":1,"prob":100,"isl_stddev":-1}]}"#,
                "non-negative",
            ),
        ] {
            let e = SeqDist::parse(s).expect_err(s).0;
            assert!(e.contains(why), "{s:?}: {e}");
        }
    }

    #[test]
    fn index_follows_cumulative_percentages() {
        let d = SeqDist::parse("1,1:25;2,2:50;3,3:25").unwrap();
        // Cumulative 0.25, 0.75, 1.0; a pair is chosen when u < its cumulative value.
        for (u, i) in [
            (0.0, 0),
            (0.2499, 0),
            (0.25, 1),
            (0.7499, 1),
            (0.75, 2),
            (0.9999, 2),
        ] {
            assert_eq!(d.index_for(u), i, "u={u}");
        }
        let z = SeqDist::parse("1,1:0;2,2:100").unwrap();
        assert_eq!(
            z.index_for(0.0),
            1,
            "a zero-probability pair is never drawn"
        );
    }

    #[test]
    fn drawn_mix_matches_the_probabilities() {
        let d = SeqDist::parse("128,64:25;512,128:50;1024,256:25").unwrap();
        let mut rng = StdRng::seed_from_u64(5);
        let n: f64 = 40_000.0;
        let mut counts = [0.0f64; 3];
        for _ in 0..40_000 {
            match d.sample(&mut rng) {
                (128, 64) => counts[0] += 1.0,
                (512, 128) => counts[1] += 1.0,
                (1024, 256) => counts[2] += 1.0,
                other => panic!("unexpected pair {other:?}"),
            }
        }
        // Binomial sd: sqrt(p(1-p)/n) = 0.00217 (p=0.25), 0.0025 (p=0.5); bound 5 sd.
        for (c, p) in counts.iter().zip([0.25f64, 0.5, 0.25]) {
            let sd = (p * (1.0 - p) / n).sqrt();
            assert!((c / n - p).abs() < 5.0 * sd, "{} vs {p}", c / n);
        }
    }

    #[test]
    fn stddev_pairs_vary_around_their_means() {
        let d = SeqDist::parse("1000|50,200|10:100").unwrap();
        let mut rng = StdRng::seed_from_u64(9);
        let draws: Vec<(u32, u32)> = (0..10_000).map(|_| d.sample(&mut rng)).collect();
        let mean = |f: &dyn Fn(&(u32, u32)) -> u32| {
            draws.iter().map(|x| f64::from(f(x))).sum::<f64>() / draws.len() as f64
        };
        // ceil of N(1000, 50): mean 1000.5, standard error 50/100 = 0.5; bound 5 se.
        assert!((mean(&|x| x.0) - 1000.5).abs() < 2.5);
        // ceil of N(200, 10): mean 200.5, standard error 0.1; bound 5 se.
        assert!((mean(&|x| x.1) - 200.5).abs() < 0.5);
    }

    #[test]
    fn positive_normal_integer_is_aiperfs() {
        let mut rng = StdRng::seed_from_u64(3);
        assert_eq!(positive_normal_integer(550.0, 0.0, &mut rng), 550);
        assert_eq!(
            positive_normal_integer(2.5, 0.0, &mut rng),
            2,
            "ties to even"
        );
        assert_eq!(positive_normal_integer(3.5, -1.0, &mut rng), 4);
        assert_eq!(positive_normal_integer(0.2, 0.0, &mut rng), 1);
        assert_eq!(positive_normal_integer(f64::NAN, 1.0, &mut rng), 1);
        // N(1, 1) truncated at 0, rounded up: P(1) = (Φ(0)-Φ(-1))/(1-Φ(-1)) = 0.405713,
        // P(2) = (Φ(1)-Φ(0))/(1-Φ(-1)) = 0.405713, P(3) = 0.161533 (an untruncated draw would
        // give P(1) = Φ(0) + … = 0.841). Bound: 5 binomial sd at n = 40,000 (0.0123, 0.0092).
        let n = 40_000usize;
        let mut counts = [0usize; 4];
        for _ in 0..n {
            let k = positive_normal_integer(1.0, 1.0, &mut rng) as usize;
            counts[k.min(3)] += 1;
        }
        for (k, p) in [(1, 0.405713), (2, 0.405713)] {
            let sd = (p * (1.0 - p) / n as f64).sqrt();
            let got = counts[k] as f64 / n as f64;
            assert!((got - p).abs() < 5.0 * sd, "P({k}) = {got}, expected {p}");
        }
        assert_eq!(counts[0], 0);
    }
}
