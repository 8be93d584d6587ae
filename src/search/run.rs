//! The search loop.
