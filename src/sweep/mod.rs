//! Parameter sweeps (docs/sweeps.md): list values on the flags AIPerf 0.13 sweeps
//! (`--concurrency 1,2,4`), `--variant` scenarios, composed with `--num-profile-runs` trials,
//! adaptive convergence, and the sweep's own artifacts, as AIPerf lays them out.
//!
//! The pieces, for a planner (e.g. an SLO search) that decides the next point itself:
//!
//! - [`plan`]: [`SweepPlan`] (from the command line: [`extract_lists`] then
//!   [`SweepPlan::from_cli`]), its [`Variation`]s (index, label, the [`Override`]s of the
//!   swept flags) and how a variation is applied to the command line
//!   ([`SweepPlan::argv_of`]); [`config_of`] turns that into a validated [`crate::config::Config`].
//!   A planner makes its own points with [`Variation::new`] (flags found with
//!   [`SweepableFlag::lookup`]) and any index not used by the plan.
//! - [`run`]: [`Sweeper`] runs one variation with all its trials into its directory
//!   ([`Sweeper::run_variation`]) and returns a [`VariationResult`]: the aggregate across its
//!   trials (`<tag>_<stat>` keys as `profile_export_aiperf_aggregate.json` has them, read with
//!   [`VariationResult::mean`]), the client-health verdict
//!   ([`VariationResult::client_fell_behind`]: never choose such a point) and whether a
//!   signal cut it short ([`VariationResult::cancelled`], [`Sweeper::cancelled`]: stop
//!   planning). [`Sweeper::finish`] writes the sweep aggregate of the results and the table.
//!   [`run_sweep`] is the whole grid / zip / scenario sweep.
//! - [`convergence`]: the `ci_width` / `cv` decision over per-trial values.
//! - [`output`]: the sweep aggregate files and the console table.

pub use crate::run::convergence;
pub mod annotate;
mod error;
pub mod output;
pub mod plan;
pub mod result;
pub mod run;
pub mod shards;

pub use error::SweepError;
pub use plan::{
    Convergence, ConvergenceMode, ListFlags, ListValues, Override, ParamValue, SWEEPABLE,
    SweepMode, SweepPlan, SweepType, SweepableFlag, Variation, extract_lists,
};
pub use result::{TrialResult, VariationResult};
pub use run::{Sweeper, config_of, run_sweep};

#[cfg(test)]
mod tests;
