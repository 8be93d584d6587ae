//! What a search recipe adds to the sweep aggregate document (docs/sweeps.md, "SLA
//! constraints and Pareto axes"): its SLA bounds, which make `metadata.sla_constraints`
//! and restrict `best_configurations` (to the feasible variations, all of them when none is)
//! and `pareto_optimal` (to the feasible ones, none when none is); and the recipe's Pareto
//! axes, `metadata.pareto_axes`, as AIPerf 0.13 writes them.

use serde_json::{Value, json};

/// The recipe's additions to the sweep aggregate; the default adds nothing.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Annotations {
    /// The SLA bounds every feasible variation meets (none: no `sla_constraints`).
    pub sla: Vec<SlaBound>,
    /// `metadata.pareto_axes`, as the recipe declares them.
    pub pareto_axes: Option<Value>,
}

/// One SLA bound on a variation's row of the sweep aggregate.
#[derive(Clone, Debug, PartialEq)]
pub struct SlaBound {
    /// The metric tag (`time_to_first_token`).
    pub metric_tag: String,
    /// Its statistic (`p95`).
    pub stat: String,
    /// `lt`, `le`, `gt` or `ge`.
    pub op: &'static str,
    /// The bound.
    pub threshold: f64,
}

impl SlaBound {
    /// As `active_filters` lists it.
    pub fn json(&self) -> Value {
        json!({"metric_tag": self.metric_tag, "stat": self.stat, "op": self.op,
               "threshold": self.threshold})
    }

    /// Whether a row's metrics meet the bound; a metric that is absent does not.
    pub fn met_by(&self, metrics: &Value) -> bool {
        let Some(v) = observed(metrics, &self.metric_tag, &self.stat) else {
            return false;
        };
        match self.op {
            "lt" => v < self.threshold,
            "le" => v <= self.threshold,
            "gt" => v > self.threshold,
            "ge" => v >= self.threshold,
            _ => false,
        }
    }
}

/// A bound's figure in a row's metrics: the `mean` of `<tag>_<stat>` (trials), else `<tag>`'s
/// own `stat` (one trial), else `<tag>`'s `mean` (AIPerf's three lookups, in that order).
pub fn observed(metrics: &Value, tag: &str, stat: &str) -> Option<f64> {
    if let Some(v) = metrics[format!("{tag}_{stat}")].get("mean") {
        return v.as_f64();
    }
    let block = metrics.get(tag)?;
    block[stat].as_f64().or_else(|| block["mean"].as_f64())
}

impl Annotations {
    /// Whether each row (`per_combination_metrics`) meets every bound.
    pub fn feasible(&self, rows: &[Value]) -> Vec<bool> {
        rows.iter()
            .map(|r| self.sla.iter().all(|b| b.met_by(&r["metrics"])))
            .collect()
    }

    /// `metadata.sla_constraints` for rows whose feasibility is `mask`; `None` without bounds.
    pub fn sla_constraints(&self, mask: &[bool]) -> Option<Value> {
        if self.sla.is_empty() {
            return None;
        }
        let ok = mask.iter().filter(|&&m| m).count();
        Some(json!({
            "active_filters": self.sla.iter().map(SlaBound::json).collect::<Vec<_>>(),
            "feasible_count": ok,
            "infeasible_count": mask.len() - ok,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bound(op: &'static str) -> SlaBound {
        SlaBound {
            metric_tag: "time_to_first_token".into(),
            stat: "p95".into(),
            op,
            threshold: 100.0,
        }
    }

    /// The three lookups in AIPerf's order, and each operator at its edge.
    #[test]
    fn bounds_read_the_three_layouts_and_each_operator() {
        let trials = json!({"time_to_first_token_p95": {"mean": 100.0},
                            "time_to_first_token": {"p95": 1.0, "mean": 1.0}});
        let one = json!({"time_to_first_token": {"p95": 100.0, "mean": 1.0}});
        let mean_only = json!({"time_to_first_token": {"mean": 100.0}});
        for m in [&trials, &one, &mean_only] {
            assert_eq!(observed(m, "time_to_first_token", "p95"), Some(100.0));
            assert!(!bound("lt").met_by(m));
            assert!(bound("le").met_by(m));
            assert!(!bound("gt").met_by(m));
            assert!(bound("ge").met_by(m));
        }
        assert!(!bound("ge").met_by(&json!({"request_latency": {"p95": 1.0}})));
    }

    #[test]
    fn constraints_count_the_feasible_rows() {
        let a = Annotations {
            sla: vec![bound("lt")],
            pareto_axes: None,
        };
        let rows = [
            json!({"metrics": {"time_to_first_token": {"p95": 50.0}}}),
            json!({"metrics": {"time_to_first_token": {"p95": 150.0}}}),
            json!({"metrics": {}}),
        ];
        let mask = a.feasible(&rows);
        assert_eq!(mask, [true, false, false]);
        let c = a.sla_constraints(&mask).unwrap();
        assert_eq!(c["feasible_count"], 1);
        assert_eq!(c["infeasible_count"], 2);
        assert_eq!(c["active_filters"][0]["op"], "lt");
        assert_eq!(Annotations::default().sla_constraints(&mask), None);
    }
}
