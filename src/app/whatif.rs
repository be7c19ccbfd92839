//! `whatif -f pod.yaml`: where would this pod go?

use super::output::{frameworks, load_cluster, print_structured, profile_for, table_options};
use super::{EXIT_FITS, EXIT_UNSCHEDULABLE, Failure, Outcome};
use crate::cli::{GlobalArgs, Output, WhatifArgs};
use crate::explain;
use crate::framework::snapshot::Snapshot;
use crate::model::{defaults, pod::Pod, validate};
use crate::source::file;
use anyhow::anyhow;
use k8s_openapi::api::core::v1 as k8s;

/// Reads, defaults, admits and validates the pod of `-f` as the API server would.
pub fn load_pod(
    path: &str,
    namespace_flag: Option<&str>,
    cluster: &crate::model::cluster::Cluster,
) -> Result<Pod, Failure> {
    let (display, value) = file::load_single(path).map_err(Failure::bad_input)?;
    let kind = value.get("kind").and_then(|k| k.as_str()).unwrap_or("Pod");
    if kind != "Pod" {
        return Err(Failure::bad_input(anyhow!(
            "{display}: expected a Pod, found a {kind}"
        )));
    }
    let mut pod: k8s::Pod = file::typed(&display, "Pod", value).map_err(Failure::bad_input)?;
    if pod.metadata.name.as_deref().is_none_or(str::is_empty)
        && let Some(prefix) = pod.metadata.generate_name.clone()
    {
        pod.metadata.name = Some(format!("{prefix}whatif"));
    }
    if let (Some(flag), Some(own)) = (namespace_flag, pod.metadata.namespace.as_deref())
        && flag != own
    {
        return Err(Failure::bad_input(anyhow!(
            "{display}: the namespace from the provided object {own:?} does not match the namespace {flag:?}. You must pass '--namespace={own}' to perform this operation."
        )));
    }
    defaults::pod(&mut pod, namespace_flag.unwrap_or("default"));
    let object = format!(
        "{}/{}",
        pod.metadata.namespace.as_deref().unwrap_or(""),
        pod.metadata.name.as_deref().unwrap_or("")
    );
    validate::pod(&pod).map_err(|e| {
        Failure::bad_input(anyhow!(
            "{display}: Pod {object} is invalid:\n  {}",
            e.0.join("\n  ")
        ))
    })?;
    let classes: Vec<_> = cluster
        .priority_classes
        .iter()
        .map(|c| k8s_openapi::api::scheduling::v1::PriorityClass {
            metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                name: Some(c.name.to_string()),
                ..Default::default()
            },
            value: Some(c.value),
            global_default: Some(c.global_default),
            preemption_policy: Some(
                if c.preemption_never {
                    "Never"
                } else {
                    "PreemptLowerPriority"
                }
                .to_string(),
            ),
            ..Default::default()
        })
        .collect();
    defaults::admit_priority(&mut pod, &classes).map_err(
        |defaults::UnknownPriorityClass(class)| {
            Failure::bad_input(anyhow!(
                "{display}: pods {:?} is forbidden: no PriorityClass with name {class} was found",
                pod.metadata.name.as_deref().unwrap_or("")
            ))
        },
    )?;
    Pod::from_k8s(&pod).map_err(|e| Failure::bad_input(anyhow!("{display}: {e}")))
}

pub fn run(global: &GlobalArgs, args: &WhatifArgs) -> Outcome {
    let cluster = load_cluster(global)?;
    let pod = load_pod(&args.file, global.namespace.as_deref(), &cluster)?;
    let fws = frameworks(args.scheduler.config.as_deref(), args.scheduler.serial)?;
    let fw = profile_for(&fws, &pod.scheduler_name)?;
    let snapshot = Snapshot::new(cluster, None);
    let result = fw.schedule(&snapshot, &pod);
    let explanation = explain::build(fw, &snapshot, &pod, &result);
    render(global, &explanation)?;
    Ok(if explanation.fits() {
        EXIT_FITS
    } else {
        EXIT_UNSCHEDULABLE
    })
}

pub fn render(global: &GlobalArgs, e: &explain::Explanation) -> Result<(), Failure> {
    match global.output {
        Output::Json | Output::Yaml => print_structured(e, global.output),
        Output::Table | Output::Wide => {
            print!("{}", explain::table::render(e, table_options(global)));
            Ok(())
        }
    }
}
