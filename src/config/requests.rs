//! The request-shaping endpoint flags checked (`--model-selection-strategy`), as AIPerf 0.13
//! checks them.

use super::ConfigError;
use crate::cli::requests::{RequestArgs, SelectionArg};
use crate::workload::models::ModelSelection;

/// The model-selection strategy; `weighted` is refused as AIPerf refuses it when no model has a
/// weight (no flag gives one).
pub fn model_selection(args: &RequestArgs) -> Result<ModelSelection, ConfigError> {
    match args.model_selection_strategy {
        SelectionArg::RoundRobin => Ok(ModelSelection::RoundRobin),
        SelectionArg::Random => Ok(ModelSelection::Random),
        SelectionArg::Weighted => Err(ConfigError::flag(
            "--model-selection-strategy weighted: all models must have weights specified when \
             using weighted strategy (no flag gives a model a weight)",
        )),
    }
}
