//! The dynamic resource allocation objects parsed once (`objects`: DeviceClasses,
//! ResourceSlices, ResourceClaims and their templates) with their device selectors compiled in
//! the CEL environment kube-scheduler gives them (`cel`).

pub mod cel;
pub mod objects;
