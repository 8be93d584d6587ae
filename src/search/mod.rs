//! SLO search (docs/search.md): `--search-recipe` and the adaptive `--search-*` flags, built on
//! the sweep runner ([`crate::sweep::Sweeper`]): a planner picks each next point, the sweep
//! runs it, its figures are judged against the SLA filters, and the answer is one console line
//! plus AIPerf's `search_history.json`.
//!
//! - [`sla`]: the SLA filters (`--search-sla` and those recipes make) and their verdict.
//! - [`recipe`]: the built-in recipes, expanded as AIPerf expands them.
//! - [`planner`]: the 1-D boundary planners (`monotonic_sla`, `smooth_isotonic`).
//! - [`bayes`]: the Bayesian planner (a small Gaussian process, Halton start).
//! - [`tpe`]: the Tree-structured Parzen Estimator (`--optuna-sampler tpe`).
//! - [`derived`]: the grid recipes' derived files (`degradation_knee.json`, `sla_breach.json`,
//!   `prefill_curve.json`).
//! - [`config`]: the flags made into a [`SearchSpec`](config::SearchSpec).
//! - [`run`]: the search loop, its files and its answer.

pub mod bayes;
pub mod config;
pub mod derived;
pub mod planner;
pub mod recipe;
pub mod run;
pub mod sla;
pub mod tiers;
pub mod tpe;

use std::fmt;

/// A refused search command line, or a search that could not run.
#[derive(Debug)]
#[non_exhaustive]
pub enum SearchError {
    /// A flag's value is refused.
    Flag {
        /// The flag.
        flag: &'static str,
        /// Why.
        message: String,
    },
    /// A recipe cannot expand with the flags given.
    Recipe {
        /// The recipe.
        recipe: recipe::Recipe,
        /// Why.
        message: String,
    },
    /// Recipe bounds that make no grid.
    Bounds {
        /// Why.
        message: String,
    },
    /// The sweep runner refused or failed.
    Sweep(crate::sweep::SweepError),
    /// A search file could not be written.
    Write {
        /// The file.
        path: std::path::PathBuf,
        /// The error.
        source: std::io::Error,
    },
}

impl SearchError {
    /// A refused value of `flag`.
    pub fn flag(flag: &'static str, message: String) -> Self {
        SearchError::Flag { flag, message }
    }

    /// A refused expansion of `recipe`.
    pub fn recipe(recipe: recipe::Recipe, message: String) -> Self {
        SearchError::Recipe { recipe, message }
    }

    /// Bounds that make no grid.
    pub fn bounds(message: String) -> Self {
        SearchError::Bounds { message }
    }
}

impl fmt::Display for SearchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SearchError::Flag { flag, message } => write!(f, "{flag} {message}"),
            SearchError::Recipe { recipe, message } => {
                write!(f, "recipe '{}' {message}", recipe.name())
            }
            SearchError::Bounds { message } => f.write_str(message),
            SearchError::Sweep(e) => write!(f, "{e}"),
            SearchError::Write { path, source } => {
                write!(f, "cannot write {}: {source}", path.display())
            }
        }
    }
}

impl std::error::Error for SearchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            SearchError::Sweep(e) => Some(e),
            SearchError::Write { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl From<crate::sweep::SweepError> for SearchError {
    fn from(e: crate::sweep::SweepError) -> Self {
        SearchError::Sweep(e)
    }
}
