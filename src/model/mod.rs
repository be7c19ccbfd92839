//! The cluster model: API objects parsed once into compact, interned, indexed values.

pub mod affinity;
pub mod api_object;
pub mod cluster;
pub mod declared_features;
pub mod defaults;
pub mod dra;
pub mod dump;
pub mod error;
pub mod field;
pub mod intern;
pub mod labels;
pub mod node;
pub mod node_info;
pub mod node_selector;
pub mod parse;
pub mod pod;
pub mod quantity;
pub mod resource;
pub mod selection;
pub mod taints;
pub mod validate;
pub mod volume;
