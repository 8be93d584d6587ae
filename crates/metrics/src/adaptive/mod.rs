//! AIPerf 0.13's `adaptive_scale` timing mode, apart from the run: its settings
//! ([`settings`]), the statistics of one assessment window ([`window`]), the controller that
//! turns windows into control values ([`controller`]), and the three files it writes
//! ([`artifacts`]). The run (`ringperf::run`) feeds windows in and applies the values.

pub mod artifacts;
pub mod controller;
pub mod settings;
pub mod tap;
pub mod window;
