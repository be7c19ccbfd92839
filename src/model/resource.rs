//! Resource lists and the scheduler's aggregated `Resource` (millicores, bytes, pod count, scalar
//! resources), with pod requests computed as `resourcehelper.PodRequests` and
//! `PodInfo.CalculateResource` do in kube-scheduler v1.34.

use super::intern::{Entry, Str};
use super::quantity::Quantity;

pub const CPU: &str = "cpu";
pub const MEMORY: &str = "memory";
pub const EPHEMERAL_STORAGE: &str = "ephemeral-storage";
pub const PODS: &str = "pods";

/// `schedutil.DefaultMilliCPURequest` and `DefaultMemoryRequest`: what a container without requests
/// counts as when nodes are scored.
pub const DEFAULT_MILLI_CPU_REQUEST: i64 = 100;
pub const DEFAULT_MEMORY_REQUEST: i64 = 200 * 1024 * 1024;

/// An exact `v1.ResourceList`, in insertion order with unique names.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceList(Vec<(Str, Quantity)>);

impl ResourceList {
    pub fn new() -> ResourceList {
        ResourceList(Vec::new())
    }

    /// Room for `n` names: a pod's lists are built once and kept, so they are sized exactly
    /// rather than grown (a grown list holds room for four).
    pub fn with_capacity(n: usize) -> ResourceList {
        ResourceList(Vec::with_capacity(n))
    }

    pub fn get(&self, name: &str) -> Option<Quantity> {
        self.0
            .iter()
            .find(|(n, _)| n.as_str() == name)
            .map(|&(_, q)| q)
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn set(&mut self, name: Str, q: Quantity) {
        match self.0.iter_mut().find(|(n, _)| *n == name) {
            Some(entry) => entry.1 = q,
            None => self.0.push((name, q)),
        }
    }

    pub fn iter(&self) -> impl Iterator<Item = (Str, Quantity)> + '_ {
        self.0.iter().copied()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `addResourceList`: adds every entry of `other`.
    pub fn add(&mut self, other: &ResourceList) {
        for (name, q) in other.iter() {
            match self.0.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => entry.1 = entry.1 + q,
                None => self.0.push((name, q)),
            }
        }
    }

    /// `maxResourceList`: keeps the larger value of each entry.
    pub fn max(&mut self, other: &ResourceList) {
        for (name, q) in other.iter() {
            match self.0.iter_mut().find(|(n, _)| *n == name) {
                Some(entry) => {
                    if q > entry.1 {
                        entry.1 = q
                    }
                }
                None => self.0.push((name, q)),
            }
        }
    }
}

/// `v1helper.IsNativeResource`: no domain, or in the kubernetes.io domain.
fn is_native(name: &str) -> bool {
    !name.contains('/') || name.contains("kubernetes.io/")
}

/// An amount of a resource as `framework.Resource` holds it (cpu in millicores, everything else
/// in units) as a quantity in canonical form: bytes (memory, storage, huge pages) in binary
/// units, the rest decimal.
pub fn canonical_amount(name: &str, amount: i64) -> String {
    if name == CPU {
        return Quantity::from_milli(amount).canonical(false);
    }
    let bytes = name == MEMORY
        || name == EPHEMERAL_STORAGE
        || name == "storage"
        || name.starts_with("hugepages-");
    Quantity::from_units(amount).canonical(bytes)
}

/// `v1helper.IsExtendedResourceName`.
pub fn is_extended(name: &str) -> bool {
    if is_native(name) || name.starts_with("requests.") {
        return false;
    }
    super::labels::validate_label_key(&format!("requests.{name}")).is_ok()
}

/// `schedutil.IsScalarResourceName`: the names the scheduler tracks beyond cpu, memory,
/// ephemeral-storage and pods. Anything else (an unprefixed unknown name) is ignored upstream.
pub fn is_scalar(name: &str) -> bool {
    is_extended(name)
        || name.starts_with("hugepages-")
        || name.contains("kubernetes.io/")
        || name.starts_with("attachable-volumes-")
}

/// `framework.Resource`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Resource {
    pub milli_cpu: i64,
    pub memory: i64,
    pub ephemeral_storage: i64,
    pub allowed_pods: i64,
    pub scalars: Vec<(Str, i64)>,
}

impl Resource {
    /// `NewResource`: cpu in millicores, everything else in units; unknown names dropped.
    pub fn from_list(list: &ResourceList) -> Resource {
        let mut r = Resource::default();
        r.add_list(list);
        r
    }

    pub fn add_list(&mut self, list: &ResourceList) {
        for (name, q) in list.iter() {
            match name.as_str() {
                CPU => self.milli_cpu += q.milli_value(),
                MEMORY => self.memory += q.value(),
                PODS => self.allowed_pods += q.value(),
                EPHEMERAL_STORAGE => self.ephemeral_storage += q.value(),
                n if is_scalar(n) => self.add_scalar(name, q.value()),
                _ => {}
            }
        }
    }

    /// `SetMaxResource` on an empty Resource: the pod's request vector for NodeResourcesFit.
    pub fn max_of_list(list: &ResourceList) -> Resource {
        let mut r = Resource::default();
        for (name, q) in list.iter() {
            match name.as_str() {
                CPU => r.milli_cpu = r.milli_cpu.max(q.milli_value()),
                MEMORY => r.memory = r.memory.max(q.value()),
                EPHEMERAL_STORAGE => r.ephemeral_storage = r.ephemeral_storage.max(q.value()),
                n if is_scalar(n) => {
                    let v = r.scalar(name).max(q.value());
                    r.set_scalar(name, v)
                }
                _ => {}
            }
        }
        r
    }

    pub fn scalar(&self, name: Str) -> i64 {
        self.scalars
            .iter()
            .find(|(n, _)| *n == name)
            .map_or(0, |&(_, v)| v)
    }

    pub fn has_scalar(&self, name: Str) -> bool {
        self.scalars.iter().any(|(n, _)| *n == name)
    }

    pub fn set_scalar(&mut self, name: Str, v: i64) {
        match self.scalars.iter_mut().find(|(n, _)| *n == name) {
            Some(e) => e.1 = v,
            None => self.scalars.push((name, v)),
        }
    }

    pub fn add_scalar(&mut self, name: Str, v: i64) {
        let cur = self.scalar(name);
        self.set_scalar(name, cur + v);
    }

    /// Adds (`sign` = 1) or subtracts (`sign` = -1) another Resource, as `NodeInfo.update` does.
    pub fn accumulate(&mut self, other: &Resource, sign: i64) {
        self.milli_cpu += sign * other.milli_cpu;
        self.memory += sign * other.memory;
        self.ephemeral_storage += sign * other.ephemeral_storage;
        for &(name, v) in &other.scalars {
            self.add_scalar(name, sign * v);
        }
    }

    /// The value of a named resource as the scorers read it.
    pub fn get(&self, name: Str) -> i64 {
        match name.as_str() {
            CPU => self.milli_cpu,
            MEMORY => self.memory,
            EPHEMERAL_STORAGE => self.ephemeral_storage,
            PODS => self.allowed_pods,
            _ => self.scalar(name),
        }
    }
}

/// One container's contribution to pod requests.
#[derive(Clone, Debug, Default)]
pub struct ContainerResources {
    pub requests: ResourceList,
    /// `status.containerStatuses[].resources.requests` (in-place resize), when reported.
    pub status_requests: Option<ResourceList>,
    /// `status.containerStatuses[].allocatedResources`, when reported.
    pub allocated: Option<ResourceList>,
    /// A restartable init container (`restartPolicy: Always`): a sidecar.
    pub sidecar: bool,
}

/// Everything `resourcehelper.PodRequests` reads from a pod.
#[derive(Clone, Debug, Default)]
pub struct PodResources {
    pub containers: Vec<ContainerResources>,
    pub init_containers: Vec<ContainerResources>,
    pub overhead: Option<ResourceList>,
    /// `spec.resources.requests` restricted to the names pod-level resources support.
    pub pod_level_requests: Option<ResourceList>,
    /// The pod's PodResizePending condition says the resize is infeasible.
    pub resize_infeasible: bool,
}

/// Options of `resourcehelper.PodRequests` the scheduler uses.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestOptions {
    /// InPlacePodVerticalScaling: read container status resources too.
    pub use_status_resources: bool,
    /// Add the default 100m / 200Mi to containers that do not name cpu / memory.
    pub non_missing_defaults: NonMissing,
    /// Ignore `spec.resources` (pod-level requests).
    pub skip_pod_level: bool,
}

/// Which defaults `NonMissingContainerRequests` carries.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum NonMissing {
    #[default]
    None,
    CpuAndMemory,
    Cpu,
    Memory,
}

impl NonMissing {
    fn list(self) -> ResourceList {
        let mut l = ResourceList::new();
        if matches!(self, NonMissing::CpuAndMemory | NonMissing::Cpu) {
            static NAME: Entry = Entry::constant(CPU);
            l.set(
                Str::from_static(&NAME),
                Quantity::from_milli(DEFAULT_MILLI_CPU_REQUEST),
            );
        }
        if matches!(self, NonMissing::CpuAndMemory | NonMissing::Memory) {
            static NAME: Entry = Entry::constant(MEMORY);
            l.set(
                Str::from_static(&NAME),
                Quantity::from_units(DEFAULT_MEMORY_REQUEST),
            );
        }
        l
    }
}

/// Element-wise max of several lists (`max(...)` in resourcehelper).
fn max_lists(lists: &[&ResourceList]) -> ResourceList {
    let mut out = ResourceList::new();
    for l in lists {
        out.max(l);
    }
    out
}

impl ContainerResources {
    fn effective_requests(&self, opts: &RequestOptions, resize_infeasible: bool) -> ResourceList {
        if opts.use_status_resources
            && let Some(status) = &self.status_requests
        {
            let empty = ResourceList::new();
            let allocated = self.allocated.as_ref().unwrap_or(&empty);
            return if resize_infeasible {
                max_lists(&[status, allocated])
            } else {
                max_lists(&[&self.requests, status, allocated])
            };
        }
        self.requests.clone()
    }
}

fn apply_non_missing(reqs: &ResourceList, non_missing: &ResourceList) -> ResourceList {
    let mut out = reqs.clone();
    for (name, q) in non_missing.iter() {
        if !reqs.contains(&name) {
            out.add(&ResourceList(vec![(name, q)]));
        }
    }
    out
}

impl PodResources {
    /// `resourcehelper.PodRequests` with pod-level resources enabled (v1.34 default).
    pub fn requests(&self, opts: &RequestOptions) -> ResourceList {
        let non_missing = opts.non_missing_defaults.list();
        let container_reqs = |c: &ContainerResources| {
            let r = c.effective_requests(opts, self.resize_infeasible);
            if non_missing.is_empty() {
                r
            } else {
                apply_non_missing(&r, &non_missing)
            }
        };
        let mut reqs = ResourceList::new();
        for c in &self.containers {
            reqs.add(&container_reqs(c));
        }
        let mut sidecars = ResourceList::new();
        let mut init_max = ResourceList::new();
        for c in &self.init_containers {
            let r = container_reqs(c);
            let at_this_point = if c.sidecar {
                reqs.add(&r);
                sidecars.add(&r);
                sidecars.clone()
            } else {
                let mut tmp = r;
                tmp.add(&sidecars);
                tmp
            };
            init_max.max(&at_this_point);
        }
        reqs.max(&init_max);
        if let Some(pod_level) = self
            .pod_level_requests
            .as_ref()
            .filter(|_| !opts.skip_pod_level)
        {
            for (name, q) in pod_level.iter() {
                reqs.set(name, q);
            }
        }
        if let Some(overhead) = &self.overhead {
            reqs.add(overhead);
        }
        reqs
    }

    /// `PodInfo.CalculateResource`: the requests an existing pod takes from its node, and the
    /// non-zero cpu/memory used by scoring.
    pub fn calculate(&self) -> (Resource, i64, i64) {
        let base_opts = RequestOptions {
            use_status_resources: true,
            ..RequestOptions::default()
        };
        let requests = self.requests(&base_opts);
        let non_missing = match &self.pod_level_requests {
            None => NonMissing::CpuAndMemory,
            Some(_) => match (requests.contains(CPU), requests.contains(MEMORY)) {
                (true, true) => NonMissing::None,
                (false, true) => NonMissing::Cpu,
                (true, false) => NonMissing::Memory,
                (false, false) => NonMissing::CpuAndMemory,
            },
        };
        let non_zero = if non_missing == NonMissing::None {
            requests.clone()
        } else {
            self.requests(&RequestOptions {
                non_missing_defaults: non_missing,
                ..base_opts
            })
        };
        let non0_cpu = non_zero.get(CPU).map_or(0, Quantity::milli_value);
        let non0_mem = non_zero.get(MEMORY).map_or(0, Quantity::value);
        (Resource::from_list(&requests), non0_cpu, non0_mem)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(pairs: &[(&str, &str)]) -> ResourceList {
        let mut l = ResourceList::new();
        for (n, q) in pairs {
            l.set(Str::new(n), Quantity::parse(q).unwrap());
        }
        l
    }

    fn container(pairs: &[(&str, &str)], sidecar: bool) -> ContainerResources {
        ContainerResources {
            requests: list(pairs),
            sidecar,
            ..Default::default()
        }
    }

    #[test]
    fn init_containers_and_sidecars() {
        // app 1 cpu; sidecar 500m started first; a later init container needs 2 cpu on top of the sidecar.
        let pod = PodResources {
            containers: vec![container(&[("cpu", "1")], false)],
            init_containers: vec![
                container(&[("cpu", "500m")], true),
                container(&[("cpu", "2")], false),
            ],
            ..Default::default()
        };
        let (r, _, _) = pod.calculate();
        assert_eq!(r.milli_cpu, 2500);
    }

    #[test]
    fn non_zero_defaults_only_for_missing_names() {
        let pod = PodResources {
            containers: vec![container(&[("cpu", "0")], false), container(&[], false)],
            ..Default::default()
        };
        let (r, cpu, mem) = pod.calculate();
        assert_eq!(r.milli_cpu, 0);
        assert_eq!(cpu, 100);
        assert_eq!(mem, 2 * DEFAULT_MEMORY_REQUEST);
    }

    #[test]
    fn pod_level_and_overhead() {
        let pod = PodResources {
            containers: vec![container(&[("cpu", "1"), ("memory", "1Gi")], false)],
            pod_level_requests: Some(list(&[("cpu", "3")])),
            overhead: Some(list(&[("cpu", "250m")])),
            ..Default::default()
        };
        let (r, cpu, mem) = pod.calculate();
        assert_eq!(r.milli_cpu, 3250);
        assert_eq!(r.memory, 1 << 30);
        assert_eq!((cpu, mem), (3250, 1 << 30));
    }

    #[test]
    fn scalar_names() {
        assert!(is_scalar("nvidia.com/gpu"));
        assert!(is_scalar("hugepages-2Mi"));
        assert!(is_scalar("kubernetes.io/batteries"));
        assert!(!is_scalar("foo"));
        assert!(!is_scalar("cpu"));
    }
}
