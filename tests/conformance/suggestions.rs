//! "What would make it fit", proved from the outside: for every case whose pod fits nowhere (or
//! only by preemption), every suggestion `whatif` prints is applied as a script would apply it —
//! its `podPatch` (RFC 6902) on the case's pod manifest, its `edits` as `whatif` flags — and
//! `whatif` is run again: the pod must then be placed, without preemption, on one of the
//! suggestion's `fitsOn` nodes. A pending pod without a suggestion must say why.

use serde_json::Value;
use std::path::Path;
use std::process::Command;

/// `whatif` on the case under `release`, with `extra` arguments, its JSON output parsed.
fn whatif(dir: &Path, release: &str, pod: &Path, extra: &[String]) -> Result<Value, String> {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_kubectl-sched"));
    cmd.arg("whatif")
        .arg("--scheduler-version")
        .arg(release)
        .arg("--snapshot")
        .arg(dir.join("cluster.yaml"))
        .arg("-f")
        .arg(pod)
        .args(["-o", "json"])
        .args(extra);
    if dir.join("config.yaml").exists() {
        cmd.arg("--config").arg(dir.join("config.yaml"));
    }
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run the binary: {e}"))?;
    if !matches!(out.status.code(), Some(0 | 1)) {
        return Err(format!(
            "whatif {extra:?}: exit {:?}: {}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("whatif {extra:?}: not JSON: {e}"))
}

/// Where the re-run placed the pod without preemption: the best nodes of a single cycle, or the
/// node a change plan put the `-f` pod on.
fn placed(rerun: &Value) -> Result<Vec<String>, String> {
    let names = |v: &Value| -> Vec<String> {
        v.as_array()
            .into_iter()
            .flatten()
            .filter_map(|n| n.as_str().map(str::to_string))
            .collect()
    };
    if rerun.get("verdict").is_none() {
        return Ok(names(&rerun["selected"]));
    }
    let pod = rerun["pods"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|p| p["origin"] == "Workload")
        .ok_or("the plan did not queue the pod")?;
    if pod["outcome"] != "Scheduled" || pod["preempts"].as_array().is_some_and(|p| !p.is_empty()) {
        return Err(format!("the plan left the pod {pod}"));
    }
    Ok(pod["node"]
        .as_str()
        .map(str::to_string)
        .into_iter()
        .collect())
}

/// Checks every suggestion of the case under `release`; `Ok(n)` with how many were re-run.
pub fn check(dir: &Path, release: &str) -> Result<usize, String> {
    let pod_file = dir.join("pod.yaml");
    let ours = whatif(dir, release, &pod_file, &[])?;
    let pending = ours["selected"].as_array().is_none_or(Vec::is_empty);
    let suggestions = ours["suggestions"].as_array().cloned();
    if !pending {
        return match suggestions {
            None => Ok(0),
            Some(_) => Err("suggestions for a pod that fits".into()),
        };
    }
    let Some(suggestions) = suggestions else {
        return Err("a pending pod without the suggestions section".into());
    };
    if suggestions.is_empty() {
        return match ours["noSuggestion"].as_str() {
            Some(why) if !why.is_empty() => Ok(0),
            _ => Err("no suggestion and no reason why".into()),
        };
    }
    let manifest: Value = serde_saphyr::from_str(&std::fs::read_to_string(&pod_file).unwrap())
        .map_err(|e| format!("pod.yaml: {e}"))?;
    for s in &suggestions {
        let what = s["description"].as_str().unwrap_or_default();
        let mut pod = manifest.clone();
        let ops: json_patch::Patch = serde_json::from_value(s["podPatch"].clone())
            .map_err(|e| format!("{what}: podPatch is not RFC 6902: {e}"))?;
        json_patch::patch(&mut pod, &ops)
            .map_err(|e| format!("{what}: podPatch does not apply to pod.yaml: {e}"))?;
        let mut patched = tempfile::NamedTempFile::new().unwrap();
        serde_json::to_writer(&mut patched, &pod).unwrap();
        let mut extra: Vec<String> = s["edits"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e.as_str().map(str::to_string))
            .collect();
        extra.push("--no-suggest".into());
        let rerun = whatif(dir, release, patched.path(), &extra)?;
        let on = placed(&rerun).map_err(|e| format!("{what}: {e}"))?;
        let fits_on = &s["fitsOn"];
        if on.is_empty()
            || !on
                .iter()
                .all(|n| fits_on.as_array().unwrap().contains(&n.as_str().into()))
        {
            return Err(format!(
                "{what}: re-run with {extra:?} places the pod on {on:?}, the suggestion says {fits_on}"
            ));
        }
    }
    Ok(suggestions.len())
}
