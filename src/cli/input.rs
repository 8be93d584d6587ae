//! Input group flags that choose the dataset source: custom files (`--input-file`, `--custom-dataset-type`), public datasets and sampling.

use clap::Args;

/// See the module documentation.
#[derive(Debug, Args, Clone, Default)]
pub struct InputArgs {}
