//! kubectl-sched: kube-scheduler's decision pipeline (v1.34 to v1.37), offline and explained.
//!
//! Data flows one way: a source (`source`) produces API objects, `model` parses them once into
//! an indexed `Cluster`, `framework` runs a profile's plugins (`plugins`, `preemption`) over a
//! `Snapshot` and `explain` turns the result into the documented explanation and its renderings.
//! The only I/O besides sources: with `--call-extenders`, the app gives the framework HTTP
//! clients of the configuration's scheduler extenders (`extender`), which the cycle calls through
//! the `framework::extender::Extender` trait.

pub mod app;
pub mod cli;
pub mod compare;
pub mod config;
pub mod dra;
pub mod explain;
pub mod extender;
pub mod framework;
pub mod lease;
pub mod model;
pub mod plan;
pub mod plugins;
pub mod preemption;
pub mod release;
pub mod source;
pub mod suggest;
pub mod term;
#[cfg(test)]
pub mod testing;
