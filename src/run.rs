//! Orchestration of a profile run.
