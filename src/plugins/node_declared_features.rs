//! NodeDeclaredFeatures (PreFilter, Filter): a pod that needs a node feature (restart rules that
//! restart all containers, host networking in a user namespace) goes only to nodes whose kubelet
//! declares it in `status.declaredFeatures`. In the default profile from 1.36; a 1.35 scheduler
//! knows the plugin but its gate is off, so there it does nothing.

use crate::framework::cycle_state::CycleState;
use crate::framework::facts::Detail;
use crate::framework::plugin::{Cx, Plugin, Points, PreFilterNodes, Reuse};
use crate::framework::status::Status;
use crate::model::node_info::NodeInfo;

pub const NAME: &str = "NodeDeclaredFeatures";
const UNSATISFIED: &str = "node(s) didn't match Pod's required features";

pub struct NodeDeclaredFeatures {
    /// The NodeDeclaredFeatures gate.
    pub enabled: bool,
    /// The feature registry infers UserNamespacesHostNetworkSupport for scheduling (1.36).
    pub infers_user_namespaces: bool,
}

impl NodeDeclaredFeatures {
    fn required(&self, cx: &Cx) -> crate::model::declared_features::FeatureSet {
        let required = cx.pod.required_features;
        if self.infers_user_namespaces {
            required
        } else {
            required.without_user_namespaces_host_network()
        }
    }
}

impl Plugin for NodeDeclaredFeatures {
    fn name(&self) -> &'static str {
        NAME
    }

    fn points(&self) -> Points {
        Points::PRE_FILTER | Points::FILTER
    }

    fn pre_filter(&self, cx: &Cx, _state: &mut CycleState) -> (Status, PreFilterNodes) {
        if !self.enabled || self.required(cx).is_empty() {
            return (Status::skip(), None);
        }
        (Status::success(), None)
    }

    fn filter(&self, cx: &Cx, _state: &CycleState, node: &NodeInfo) -> Status {
        let (required, declared) = (self.required(cx), node.node.declared_features);
        if !self.enabled || required.is_subset(declared) {
            return Status::success();
        }
        cx.with_fact(Status::unresolvable(UNSATISFIED), || {
            Detail::MissingFeatures(required.without(declared))
        })
    }

    fn reuse(&self) -> Reuse {
        Reuse::NODE_LOCAL
    }
}

#[cfg(test)]
mod tests {
    use crate::release::Release;
    use crate::testing::{cluster, explain_as, node, pod};
    use serde_json::json;

    #[test]
    fn pods_needing_a_feature_go_where_it_is_declared() {
        let mut declaring = node("new", "4", json!({}));
        declaring["status"]["declaredFeatures"] = json!(["RestartAllContainersOnContainerExits"]);
        let c = cluster(vec![node("old", "4", json!({})), declaring]);
        let mut p = pod("ns/p", None, "1", 0, json!({}));
        p["spec"]["containers"][0]["restartPolicyRules"] = json!([{"action": "RestartAllContainers", "exitCodes": {"operator": "In", "values": [1]}}]);
        let v136 = Release::parse("1.36").unwrap();
        let e = explain_as(v136, c.clone(), p.clone());
        assert_eq!(e.selected, ["new"]);
        let old = e.nodes.iter().find(|n| n.name == "old").unwrap();
        assert_eq!(old.plugin, Some(super::NAME));
        assert_eq!(old.reasons, [super::UNSATISFIED]);
        assert_eq!(e.message, "", "the pod fits: no message");
        // 1.35 has the plugin but not in its default profile; 1.34 has neither.
        for older in ["1.35", "1.34"] {
            let e = explain_as(Release::parse(older).unwrap(), c.clone(), p.clone());
            assert_eq!(e.feasible.len(), 2, "{older}");
        }
        // 1.35 with the gate on: the plugin filters, but its registry knows restart rules only.
        let (gates, _) = crate::release::gates::Gates::parse(
            Release::parse("1.35").unwrap(),
            &["NodeDeclaredFeatures=true".into()],
        )
        .unwrap();
        let v135 = crate::release::ReleaseChoice {
            gates,
            ..Release::parse("1.35").unwrap().into()
        };
        let fw = crate::plugins::registry::default_framework(v135);
        let snapshot = crate::framework::snapshot::Snapshot::new(c.clone(), None);
        let parsed = |v: serde_json::Value| {
            let strings = crate::model::intern::Interner::new();
            let parse = crate::model::parse::Parse::new(&strings);
            crate::model::pod::Pod::from_k8s(&serde_json::from_value(v).unwrap(), &parse).unwrap()
        };
        let restart = parsed(p.clone());
        assert_eq!(fw.schedule(&snapshot, &restart).feasible.len(), 1);
        let mut userns = pod("ns/u", None, "1", 0, json!({}));
        userns["spec"]["hostNetwork"] = json!(true);
        userns["spec"]["hostUsers"] = json!(false);
        let userns = parsed(userns);
        assert_eq!(fw.schedule(&snapshot, &userns).feasible.len(), 2);
        // A pod without requirements never meets the plugin.
        let plain = pod("ns/q", None, "1", 0, json!({}));
        assert_eq!(explain_as(v136, c, plain).feasible.len(), 2);
    }
}
