//! The scheduling framework: extension points, cycle state, the runner that executes a profile,
//! the scheduler extenders it calls, and the FitError message.

pub mod cycle_state;
pub mod extender;
pub mod fit_error;
pub mod plugin;
pub mod profile;
pub mod runner;
pub mod sequence;
pub mod snapshot;
pub mod status;
