//! Dynamic resource allocation as kube-scheduler models it on the parsed objects
//! (`model::dra`): the structured allocator (`allocator`) that the DynamicResources plugin runs
//! per node, and the claims scheduling has assumed since the cluster was read (`assumed`).

pub mod allocator;
pub mod assumed;
