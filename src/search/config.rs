//! The search flags made into a search.
