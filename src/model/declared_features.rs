//! Node declared features (`component-helpers/nodedeclaredfeatures`): what a kubelet says its
//! node supports (`status.declaredFeatures`) and what a pod needs of it to run there.

use k8s_openapi::api::core::v1 as k8s;

/// The features the scheduler's registry knows, sorted as upstream's feature mapper sorts them.
const REGISTERED: [&str; 5] = [
    "ExtendWebSocketsToKubelet",
    "InPlacePodLevelResourcesVerticalScaling",
    "InPlacePodVerticalScalingInitContainers",
    RESTART_ALL_CONTAINERS,
    USER_NAMESPACES_HOST_NETWORK,
];
const RESTART_ALL_CONTAINERS: &str = "RestartAllContainersOnContainerExits";
const USER_NAMESPACES_HOST_NETWORK: &str = "UserNamespacesHostNetworkSupport";

/// A set of registered features, one bit each in `REGISTERED` order.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FeatureSet(u8);

impl FeatureSet {
    fn with(self, name: &str) -> FeatureSet {
        match REGISTERED.iter().position(|r| *r == name) {
            Some(i) => FeatureSet(self.0 | 1 << i),
            None => self,
        }
    }

    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    pub fn is_subset(self, of: FeatureSet) -> bool {
        self.0 & !of.0 == 0
    }

    /// The features of this set that `other` lacks.
    pub fn without(self, other: FeatureSet) -> FeatureSet {
        FeatureSet(self.0 & !other.0)
    }

    /// The features a pod needs of its node to be scheduled there (`InferForPodScheduling`).
    pub fn required_by(spec: &k8s::PodSpec) -> FeatureSet {
        let mut set = FeatureSet::default();
        let restarts_all = spec
            .containers
            .iter()
            .chain(spec.init_containers.iter().flatten())
            .flat_map(|c| c.restart_policy_rules.iter().flatten())
            .any(|r| r.action == "RestartAllContainers");
        if restarts_all {
            set = set.with(RESTART_ALL_CONTAINERS);
        }
        if spec.host_network == Some(true) && spec.host_users == Some(false) {
            set = set.with(USER_NAMESPACES_HOST_NETWORK);
        }
        set
    }

    /// A node's `status.declaredFeatures` (`FeatureMapper.TryMap`): a merge of two sorted lists
    /// that skips names it does not know. The API server keeps the list sorted; an unsorted one
    /// loses entries exactly as it does upstream.
    pub fn declared(sorted: &[String]) -> FeatureSet {
        let mut set = FeatureSet::default();
        let (mut i, mut j) = (0, 0);
        while i < sorted.len() && j < REGISTERED.len() {
            match sorted[i].as_str().cmp(REGISTERED[j]) {
                std::cmp::Ordering::Equal => {
                    set = set.with(REGISTERED[j]);
                    i += 1;
                    j += 1;
                }
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
            }
        }
        set
    }

    /// The set a release whose registry infers no user namespace with host networking for
    /// scheduling sees (1.35: the feature came in 1.36).
    pub fn without_user_namespaces_host_network(self) -> FeatureSet {
        match REGISTERED
            .iter()
            .position(|r| *r == USER_NAMESPACES_HOST_NETWORK)
        {
            Some(i) => FeatureSet(self.0 & !(1 << i)),
            None => self,
        }
    }

    /// The features' names, in registry order.
    pub fn names(self) -> Vec<&'static str> {
        REGISTERED
            .iter()
            .enumerate()
            .filter(|(i, _)| self.0 & 1 << i != 0)
            .map(|(_, n)| *n)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(v: serde_json::Value) -> k8s::PodSpec {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn pods_need_restart_rules_and_host_network_user_namespaces() {
        let plain = spec(json!({"containers": [{"name": "c"}]}));
        assert!(FeatureSet::required_by(&plain).is_empty());
        let restart = spec(
            json!({"initContainers": [{"name": "i", "restartPolicyRules": [
            {"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [42]}}]}],
            "containers": [{"name": "c"}]}),
        );
        assert_eq!(
            FeatureSet::required_by(&restart).names(),
            ["RestartAllContainersOnContainerExits"]
        );
        let userns =
            spec(json!({"hostNetwork": true, "hostUsers": false, "containers": [{"name": "c"}]}));
        assert_eq!(
            FeatureSet::required_by(&userns).names(),
            ["UserNamespacesHostNetworkSupport"]
        );
        let host_users_unset = spec(json!({"hostNetwork": true, "containers": [{"name": "c"}]}));
        assert!(FeatureSet::required_by(&host_users_unset).is_empty());
    }

    #[test]
    fn declared_lists_merge_as_sorted() {
        let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let sorted = FeatureSet::declared(&names(&[
            "Other",
            "RestartAllContainersOnContainerExits",
            "UserNamespacesHostNetworkSupport",
        ]));
        assert_eq!(sorted.names().len(), 2);
        // Out of order, the merge walks past the earlier name, as upstream's does.
        let unsorted = FeatureSet::declared(&names(&[
            "UserNamespacesHostNetworkSupport",
            "RestartAllContainersOnContainerExits",
        ]));
        assert_eq!(unsorted.names(), ["UserNamespacesHostNetworkSupport"]);
        let need = FeatureSet::default().with(RESTART_ALL_CONTAINERS);
        assert!(need.is_subset(sorted));
        assert!(!need.is_subset(unsorted));
    }
}
