//! The generator's statistics, bounds and determinism, and its config's checks.

use super::config::{Config, load};
use super::synth::Synthesizer;
