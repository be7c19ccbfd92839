//! One file per upstream plugin, named after it (`framework/plugins/<plugin>`), plus the registry
//! that builds them by upstream name and the frameworks of a configuration's profiles.

pub mod csi_translation;
pub mod default_binder;
pub mod default_preemption;
pub mod dynamic_resources;
pub mod helper;
pub mod image_locality;
pub mod inter_pod_affinity;
pub mod node_affinity;
pub mod node_declared_features;
pub mod node_name;
pub mod node_ports;
pub mod node_resources_balanced_allocation;
pub mod node_resources_fit;
pub mod node_unschedulable;
pub mod node_volume_limits;
pub mod pod_topology_spread;
pub mod queue_sort;
pub mod registry;
pub mod resource_allocation;
pub mod scheduling_gates;
pub mod storage;
pub mod taint_toleration;
pub mod volume_binding;
pub mod volume_restrictions;
pub mod volume_zone;
