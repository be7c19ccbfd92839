//! Dynamic resource allocation as kube-scheduler models it: the API objects parsed once
//! (`objects`), the CEL environment of device selectors (`cel`) and the structured allocator
//! (`allocator`) that the DynamicResources plugin runs per node.

pub mod allocator;
pub mod cel;
pub mod objects;
