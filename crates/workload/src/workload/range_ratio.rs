//! `--random-range-ratio` and `--random-corpus-style` (docs/synthetic.md): every turn's ISL and
//! OSL drawn uniformly from an integer window around `--isl` and `--osl`, shaped as the tool the
//! style names shapes it (AIPerf 0.13's `common/models/sequence_distribution.py`):
//!
//! - `vllm` (`vllm bench serve`): `[floor(mean·(1−r)), ceil(mean·(1+r))]`, `r` in `[0, 1)`; the
//!   ISL window's lower end may be 0, the OSL window's ends are at least 1. A ratio may be given
//!   per dimension, `{"input": 0.3, "output": 0.5}`.
//! - `sglang` (`sglang.benchmark.serving --dataset-name random-ids`):
//!   `[max(1, int(mean·r)), mean]`, `r` in `[0, 1]`, one ratio for both.
//!
//! Per turn the ISL is drawn first, then the OSL, each from its own window, inclusive of both
//! ends. The special tokens a server adds to a prompt are not subtracted: ringperf's tokenizers
//! count none (AIPerf's tiktoken `builtin` counts none either).

use rand::RngExt;
use rand::rngs::StdRng;

/// `--random-corpus-style`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum CorpusStyle {
    /// vLLM's symmetric window (the default).
    #[default]
    Vllm,
    /// SGLang's lower-bounded window.
    Sglang,
}

impl CorpusStyle {
    /// The flag's value, as AIPerf spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Vllm => "vllm",
            Self::Sglang => "sglang",
        }
    }
}

/// A `--random-range-ratio` that was not a valid ratio for its style; the message is AIPerf's.
#[derive(Clone, Debug, PartialEq)]
pub struct RangeRatioError(pub String);

impl std::fmt::Display for RangeRatioError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RangeRatioError {}

fn fail<T>(msg: impl Into<String>) -> Result<T, RangeRatioError> {
    Err(RangeRatioError(msg.into()))
}

/// A validated `--random-range-ratio` under its style.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RangeRatio {
    pub style: CorpusStyle,
    /// Ratio of the ISL window.
    pub isl_ratio: f64,
    /// Ratio of the OSL window (equal to `isl_ratio` under `sglang`).
    pub osl_ratio: f64,
}

/// A ratio given as a JSON object: `{"input": r, "output": r}`, nothing else.
fn parse_json_pair(value: &str) -> Result<(f64, f64), RangeRatioError> {
    let shape = || {
        format!(
            "--random-range-ratio must be a float or a JSON object with 'input' and 'output' \
             keys, got: '{value}'"
        )
    };
    let Ok(parsed) = serde_json::from_str::<serde_json::Value>(value) else {
        return fail(shape());
    };
    let Some(map) = parsed.as_object() else {
        return fail(shape());
    };
    let missing: Vec<&str> = ["input", "output"]
        .into_iter()
        .filter(|k| !map.contains_key(*k))
        .collect();
    if !missing.is_empty() {
        return fail(format!(
            "--random-range-ratio JSON object missing keys: {}",
            py_list(&missing)
        ));
    }
    let mut extra: Vec<&str> = map
        .keys()
        .map(String::as_str)
        .filter(|k| !matches!(*k, "input" | "output"))
        .collect();
    if !extra.is_empty() {
        extra.sort_unstable();
        return fail(format!(
            "--random-range-ratio JSON object has unexpected keys: {}",
            py_list(&extra)
        ));
    }
    match (map["input"].as_f64(), map["output"].as_f64()) {
        (Some(i), Some(o)) => Ok((i, o)),
        _ => fail(shape()),
    }
}

impl RangeRatio {
    /// Parses the flag's text under `style`, with AIPerf's checks and messages: a float (both
    /// dimensions) or, under `vllm` only, a JSON object with `input` and `output`; `vllm` ratios
    /// in `[0, 1)`, `sglang` ratios in `[0, 1]`.
    ///
    /// # Errors
    /// An empty value, a value of another shape, a ratio out of range.
    pub fn parse(text: &str, style: CorpusStyle) -> Result<Self, RangeRatioError> {
        let value = text.trim();
        if value.is_empty() {
            return fail("--random-range-ratio value cannot be empty");
        }
        let (isl_ratio, osl_ratio) = match (value.parse::<f64>(), style) {
            (Ok(r), _) => (r, r),
            (Err(_), CorpusStyle::Vllm) => parse_json_pair(value)?,
            (Err(_), CorpusStyle::Sglang) => {
                let is_object =
                    serde_json::from_str::<serde_json::Value>(value).is_ok_and(|v| v.is_object());
                return fail(if is_object {
                    "SGLang corpus style applies a single ratio to both ISL and OSL. \
                     Independent input/output values are not supported; provide a plain float \
                     instead (e.g. 0.3)."
                        .to_string()
                } else {
                    format!(
                        "--random-range-ratio must be a plain float for SGLang corpus style, \
                         got: '{value}'"
                    )
                });
            }
        };
        match style {
            CorpusStyle::Vllm => {
                let ok = |r: f64| r.is_finite() && (0.0..1.0).contains(&r);
                if !ok(isl_ratio) {
                    return fail(format!(
                        "ISL range_ratio must be in [0.0, 1.0), got {}",
                        py_float(isl_ratio)
                    ));
                }
                if !ok(osl_ratio) {
                    return fail(format!(
                        "OSL range_ratio must be in [0.0, 1.0), got {}",
                        py_float(osl_ratio)
                    ));
                }
            }
            CorpusStyle::Sglang => {
                if !(isl_ratio.is_finite() && (0.0..=1.0).contains(&isl_ratio)) {
                    return fail(format!(
                        "range_ratio must be in [0.0, 1.0], got {}",
                        py_float(isl_ratio)
                    ));
                }
            }
        }
        Ok(Self {
            style,
            isl_ratio,
            osl_ratio,
        })
    }

    /// The inclusive ISL window around `mean`.
    pub fn input_bounds(&self, mean: u32) -> (u32, u32) {
        let m = f64::from(mean);
        match self.style {
            CorpusStyle::Vllm => (
                to_u32((m * (1.0 - self.isl_ratio)).floor()),
                to_u32((m * (1.0 + self.isl_ratio)).ceil()),
            ),
            CorpusStyle::Sglang => (to_u32((m * self.isl_ratio).trunc()).max(1), mean),
        }
    }

    /// The inclusive OSL window around `mean`.
    pub fn output_bounds(&self, mean: u32) -> (u32, u32) {
        let m = f64::from(mean);
        match self.style {
            CorpusStyle::Vllm => (
                to_u32((m * (1.0 - self.osl_ratio)).floor()).max(1),
                to_u32((m * (1.0 + self.osl_ratio)).ceil()).max(1),
            ),
            CorpusStyle::Sglang => (to_u32((m * self.osl_ratio).trunc()).max(1), mean),
        }
    }

    /// The sampler of `(ISL, OSL)` pairs around the two means.
    pub fn sampler(&self, isl_mean: u32, osl_mean: u32) -> RangeSampler {
        RangeSampler {
            isl: self.input_bounds(isl_mean),
            osl: self.output_bounds(osl_mean),
        }
    }
}

/// A float as Python prints it in AIPerf's messages (`1.0`, `1.5`, `inf`).
fn py_float(x: f64) -> String {
    if x.is_nan() {
        "nan".into()
    } else if x.is_infinite() {
        if x > 0.0 { "inf" } else { "-inf" }.into()
    } else if x.fract() == 0.0 && x.abs() < 1e16 {
        format!("{x:.1}")
    } else {
        format!("{x}")
    }
}

/// A list of names as Python prints it (`['a', 'b']`).
fn py_list(names: &[&str]) -> String {
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    format!("[{}]", quoted.join(", "))
}

/// A non-negative window end (the formulas keep it within `0..=2·mean`).
fn to_u32(x: f64) -> u32 {
    // A float-to-int cast saturates; the ends are whole and at most twice a u32 mean.
    x.clamp(0.0, f64::from(u32::MAX)) as u32
}

/// Draws `(ISL, OSL)` uniformly from two inclusive integer windows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RangeSampler {
    /// Inclusive ISL window.
    pub isl: (u32, u32),
    /// Inclusive OSL window.
    pub osl: (u32, u32),
}

impl RangeSampler {
    /// One pair: the ISL first, then the OSL, from `rng`.
    pub fn sample(&self, rng: &mut StdRng) -> (u32, u32) {
        let isl = rng.random_range(self.isl.0..=self.isl.1);
        let osl = rng.random_range(self.osl.0..=self.osl.1);
        (isl, osl)
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;

    fn vllm(s: &str) -> Result<RangeRatio, RangeRatioError> {
        RangeRatio::parse(s, CorpusStyle::Vllm)
    }

    fn sglang(s: &str) -> Result<RangeRatio, RangeRatioError> {
        RangeRatio::parse(s, CorpusStyle::Sglang)
    }

    #[test]
    fn windows_are_the_hand_computed_ones() {
        // vllm: floor(100·0.7) = 70, ceil(100·1.3) = 130; OSL floor(40·0.7) = 28, ceil(52) = 52.
        let r = vllm("0.3").unwrap();
        assert_eq!(r.input_bounds(100), (70, 130));
        assert_eq!(r.output_bounds(40), (28, 52));
        // Odd means: floor(7·0.5) = 3, ceil(7·1.5) = ceil(10.5) = 11.
        let r = vllm("0.5").unwrap();
        assert_eq!(r.input_bounds(7), (3, 11));
        // ISL may bottom out at 0, OSL never below 1: floor(1·0.1) = 0, ceil(1·1.9) = 2.
        let r = vllm("0.9").unwrap();
        assert_eq!(r.input_bounds(1), (0, 2));
        assert_eq!(r.output_bounds(1), (1, 2));
        // r = 0 pins both at the mean.
        assert_eq!(vllm("0").unwrap().input_bounds(550), (550, 550));
        // Independent ratios.
        let r = vllm(r#"{"input": 0.25, "output": 0.5}"#).unwrap();
        assert_eq!((r.isl_ratio, r.osl_ratio), (0.25, 0.5));
        assert_eq!(r.input_bounds(200), (150, 250));
        assert_eq!(r.output_bounds(30), (15, 45));
        // sglang: [max(1, int(mean·r)), mean].
        let r = sglang("0.3").unwrap();
        assert_eq!(r.input_bounds(100), (30, 100));
        assert_eq!(r.output_bounds(40), (12, 40));
        assert_eq!(sglang("0").unwrap().input_bounds(100), (1, 100));
        assert_eq!(sglang("1").unwrap().output_bounds(64), (64, 64));
        assert_eq!(sglang("0.5").unwrap().input_bounds(1), (1, 1));
    }

    #[test]
    fn invalid_ratios_get_aiperfs_messages() {
        let msg = |r: Result<RangeRatio, RangeRatioError>| r.unwrap_err().0;
        assert_eq!(
            msg(vllm("  ")),
            "--random-range-ratio value cannot be empty"
        );
        assert_eq!(
            msg(vllm("1")),
            "ISL range_ratio must be in [0.0, 1.0), got 1.0"
        );
        assert_eq!(
            msg(vllm("-0.1")),
            "ISL range_ratio must be in [0.0, 1.0), got -0.1"
        );
        assert_eq!(
            msg(vllm(r#"{"input": 0.2, "output": 1.5}"#)),
            "OSL range_ratio must be in [0.0, 1.0), got 1.5"
        );
        assert_eq!(
            msg(vllm("nan")),
            "ISL range_ratio must be in [0.0, 1.0), got nan"
        );
        assert_eq!(
            msg(vllm(r#"{"input": 0.2}"#)),
            "--random-range-ratio JSON object missing keys: ['output']"
        );
        assert_eq!(
            msg(vllm(r#"{"input": 0.2, "output": 0.1, "z": 1, "a": 2}"#)),
            "--random-range-ratio JSON object has unexpected keys: ['a', 'z']"
        );
        assert!(msg(vllm("wide")).starts_with(
            "--random-range-ratio must be a float or a JSON object with 'input' and 'output' \
             keys, got: 'wide'"
        ));
        assert!(msg(vllm("[0.1, 0.2]")).contains("must be a float or a JSON object"));
        assert_eq!(
            msg(sglang("1.01")),
            "range_ratio must be in [0.0, 1.0], got 1.01"
        );
        assert!(
            msg(sglang(r#"{"input": 0.2, "output": 0.2}"#))
                .starts_with("SGLang corpus style applies a single ratio to both ISL and OSL.")
        );
        assert_eq!(
            msg(sglang("wide")),
            "--random-range-ratio must be a plain float for SGLang corpus style, got: 'wide'"
        );
        // sglang takes 1 (pinned at the mean), vllm does not.
        assert!(sglang("1").is_ok() && vllm("0.999").is_ok());
    }

    /// Over many draws every pair is inside its window and both ends of each window are drawn.
    #[test]
    fn draws_stay_in_the_window_and_reach_its_ends() {
        for (ratio, style) in [("0.5", CorpusStyle::Vllm), ("0.4", CorpusStyle::Sglang)] {
            let s = RangeRatio::parse(ratio, style).unwrap().sampler(20, 10);
            let mut rng = StdRng::seed_from_u64(3);
            let mut seen_isl = std::collections::BTreeSet::new();
            let mut seen_osl = std::collections::BTreeSet::new();
            for _ in 0..4000 {
                let (i, o) = s.sample(&mut rng);
                assert!((s.isl.0..=s.isl.1).contains(&i), "{style:?} isl {i}");
                assert!((s.osl.0..=s.osl.1).contains(&o), "{style:?} osl {o}");
                seen_isl.insert(i);
                seen_osl.insert(o);
            }
            // Every integer of the window is drawn, the ends included.
            assert_eq!(seen_isl.len() as u32, s.isl.1 - s.isl.0 + 1, "{style:?}");
            assert_eq!(seen_osl.len() as u32, s.osl.1 - s.osl.0 + 1, "{style:?}");
        }
    }
}
