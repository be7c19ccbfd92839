//! The scheduling framework: extension points, cycle state, the runtime that runs a profile's
//! plugins (`runner`), one scheduling cycle (`schedule_one`) and what cycles of identical pods
//! reuse (`cache`), the scheduler extenders a cycle calls, and the FitError message.

pub mod cache;
pub mod cycle_state;
pub mod extender;
pub mod facts;
pub mod fit_error;
pub mod plugin;
pub mod post_filter;
pub mod profile;
pub mod runner;
pub mod schedule_one;
pub mod sequence;
pub mod snapshot;
pub mod status;
pub mod victims;

/// `framework.MaxNodeScore`: what a Score plugin gives a node at most, once normalised.
pub const MAX_NODE_SCORE: i64 = 100;
