//! Reading a live cluster through the API server: kubeconfig resolution as kubectl does it
//! (`config`), concurrent paginated lists (`read`), errors a user can act on (`error`) and the
//! progress line (`progress`). Strictly read-only: every request is a GET.

mod config;
mod error;
mod progress;
mod read;
mod watch;

pub use super::split::drop_managed_fields;
pub use config::{ConnectOptions, Env, Target, kubeconfig_names, parse_duration, resolve};
pub use error::LiveError;
pub use read::{
    LeasePlan, LeaseRead, PAGE_SIZE, POD_FIELD_SELECTOR, Plan, PodBatch, PodFeed, PodSelection,
    Wire, names, namespaces_holding, pod_decode_error, read, read_leases, select_pods,
};
pub use watch::{LeaseLister, LeaseWatcher, Update};
