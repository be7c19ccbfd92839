//! A FailedScheduling event that does not read like the release modelled may read like another:
//! the cycle is run again under the other releases (only for such events), and those whose
//! message is the event's are named (`the event reads like v1.34.1: pass --scheduler-version`).

use super::profiles::frameworks_of;
use crate::cli::{GlobalArgs, SchedulerArgs};
use crate::explain;
use crate::framework::runner::Framework;
use crate::framework::snapshot::Snapshot;
use crate::model::pod::Pod;
use crate::release::evidence::distinct_releases;
use crate::release::{Release, ReleaseChoice, ReleaseSource};
use std::cell::OnceCell;

/// The other releases' profiles, each built when an event first needs it.
pub struct OtherReleases<'a> {
    global: &'a GlobalArgs,
    args: &'a SchedulerArgs,
    others: Vec<(Release, OnceCell<Option<Vec<Framework>>>)>,
    chosen: ReleaseChoice,
}

impl<'a> OtherReleases<'a> {
    pub fn new(global: &'a GlobalArgs, args: &'a SchedulerArgs, chosen: ReleaseChoice) -> Self {
        OtherReleases {
            global,
            args,
            // Extenders answer for the cluster as it is: they are not asked again for a guess.
            others: distinct_releases()
                .filter(|r| *r != chosen.release && !args.call_extenders)
                .map(|r| (r, OnceCell::new()))
                .collect(),
            chosen,
        }
    }

    /// The releases whose FailedScheduling message for `pod`, cut as events are, is `message`.
    pub fn reading(
        &self,
        snapshot: &Snapshot,
        pod: &Pod,
        message: &str,
        cut: impl Fn(&str) -> String,
    ) -> Vec<Release> {
        self.others
            .iter()
            .filter(|(release, fws)| {
                let fws = fws.get_or_init(|| {
                    let choice = self
                        .chosen
                        .with_release(*release, ReleaseSource::Flag)
                        .ok()?;
                    frameworks_of(self.global, self.args, choice).ok()
                });
                let Some(fw) = fws
                    .iter()
                    .flatten()
                    .find(|f| f.profile == pod.scheduler_name.as_str())
                else {
                    return false;
                };
                let result = fw.schedule(snapshot, pod);
                cut(&explain::build(fw, snapshot, pod, &result).message) == message
            })
            .map(|(r, _)| *r)
            .collect()
    }
}
