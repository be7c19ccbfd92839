//! `explain pod/NAME`: the same explanation for a pod in the cluster — pending, or bound (then
//! as if it were being scheduled now, with itself removed from its node).

use super::output::{frameworks, load_cluster, profile_for};
use super::whatif::render;
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{ExplainArgs, GlobalArgs};
use crate::explain;
use crate::framework::snapshot::Snapshot;
use anyhow::anyhow;

/// Splits `NAME`, `pod/NAME`, `pods/NAME` or `NAMESPACE/NAME`.
pub fn parse_pod_ref(s: &str, namespace: Option<&str>) -> Result<(String, String), String> {
    let default_ns = namespace.unwrap_or("default").to_string();
    match s.split_once('/') {
        None => Ok((default_ns, s.to_string())),
        Some(("pod" | "pods" | "po", name)) if !name.is_empty() => {
            Ok((default_ns, name.to_string()))
        }
        Some((ns, name)) if !ns.is_empty() && !name.is_empty() && !name.contains('/') => {
            Ok((ns.to_string(), name.to_string()))
        }
        _ => Err(format!(
            "{s:?} is not a pod reference: use NAME, pod/NAME or NAMESPACE/NAME"
        )),
    }
}

pub fn run(global: &GlobalArgs, args: &ExplainArgs) -> Outcome {
    let Some(pod_ref) = &args.pod else {
        return Err(Failure::bad_input(anyhow!(
            "name a pod (NAME, pod/NAME or NAMESPACE/NAME)"
        )));
    };
    let (ns, name) = parse_pod_ref(pod_ref, global.namespace.as_deref())
        .map_err(|e| Failure::bad_input(anyhow!(e)))?;
    let cluster = load_cluster(global)?;
    let Some(pod) = cluster.find_pod(&ns, &name).cloned() else {
        return Err(Failure::bad_input(anyhow!(
            "pods {name:?} not found in namespace {ns:?}"
        )));
    };
    if pod.is_terminated() {
        return Err(Failure::bad_input(anyhow!(
            "pod {ns}/{name} has finished ({:?}): the scheduler no longer considers it",
            pod.phase
        )));
    }
    let fws = frameworks(args.scheduler.config.as_deref(), args.scheduler.serial)?;
    let fw = profile_for(&fws, &pod.scheduler_name)?;
    let snapshot = Snapshot::new(cluster, Some(pod.uid));
    // A bound pod is explained as a fresh scheduling attempt, so its nodeName is not a constraint.
    let mut candidate = (*pod).clone();
    candidate.node_name = None;
    let result = fw.schedule(&snapshot, &candidate);
    let explanation = explain::build(fw, &snapshot, &candidate, &result);
    render(global, &explanation)?;
    Ok(if explanation.fits() {
        EXIT_FITS
    } else {
        EXIT_UNSCHEDULABLE
    })
}
